// Raw CUDA allocators: device memory (cudaMalloc) and page-locked host memory (cudaHostAlloc). Both
// throw Error(kOutOfMemory) naming the GPU, the size and CUDA's error; wrap them in an Arena
// (CreateCudaArena) for use by kernels.
#pragma once

#include <map>
#include <mutex>

#include "tessera/allocator.h"
#include "tessera/arena.h"

namespace tessera::cuda {

class CudaAllocator : public Allocator {
 public:
  // `pinned` selects page-locked host memory instead of device memory.
  CudaAllocator(int ordinal, bool pinned);
  void* Allocate(size_t bytes) override;
  void Free(void* p) override;
  const MemoryInfo& Info() const override { return info_; }
  AllocatorStats Stats() const override;

 private:
  int ordinal_;
  bool pinned_;
  MemoryInfo info_;
  mutable std::mutex mutex_;
  AllocatorStats stats_;
  std::map<void*, size_t> sizes_;
};

// An Arena over a CudaAllocator with the EP's limit and extend strategy (max_bytes 0 = no limit), and stream
// fences when several streams use its memory (ArenaOptions::stream_fences).
AllocatorPtr CreateCudaArena(int ordinal, bool pinned, size_t max_bytes, ArenaExtendStrategy strategy,
                             bool stream_fences);

}  // namespace tessera::cuda
