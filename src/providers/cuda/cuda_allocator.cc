#include "providers/cuda/cuda_allocator.h"

#include <algorithm>

#include "providers/cuda/cuda_common.h"

namespace tessera::cuda {

CudaAllocator::CudaAllocator(int ordinal, bool pinned)
    : ordinal_(ordinal), pinned_(pinned), info_(pinned ? PinnedMemoryInfo(ordinal) : DeviceMemoryInfo(ordinal)) {
  info_.allocator_type = AllocatorType::kDevice;
}

void* CudaAllocator::Allocate(size_t bytes) {
  const size_t size = std::max<size_t>(bytes, 1);  // Allocate(0) must still return a unique pointer
  DeviceGuard guard(ordinal_);
  void* p = nullptr;
  // An arena may grow while this thread captures a CUDA graph. The allocation is not part of the graph
  // (the session keeps the captured buffers alive), so it is made in relaxed mode, which capture allows.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  const cudaError_t status =
      pinned_ ? cudaHostAlloc(&p, size, cudaHostAllocPortable) : cudaMalloc(&p, size);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (status != cudaSuccess) {
    cudaGetLastError();
    Fail(ErrorCode::kOutOfMemory, info_.ToString(), ": cannot allocate ", bytes, " bytes on GPU ", ordinal_, " (",
         pinned_ ? "cudaHostAlloc" : "cudaMalloc", ": ", cudaGetErrorString(status), ")");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  sizes_[p] = size;
  stats_.bytes_in_use += size;
  stats_.bytes_reserved = stats_.bytes_in_use;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  ++stats_.num_reserves;
  return p;
}

void CudaAllocator::Free(void* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(p);
    if (it != sizes_.end()) {
      stats_.bytes_in_use -= it->second;
      stats_.bytes_reserved = stats_.bytes_in_use;
      sizes_.erase(it);
    }
  }
  DeviceGuard guard(ordinal_);
  // Errors are dropped: Free runs from destructors, and a failed free leaves nothing to recover.
  if (pinned_ ? cudaFreeHost(p) != cudaSuccess : cudaFree(p) != cudaSuccess) cudaGetLastError();
}

AllocatorStats CudaAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

AllocatorPtr CreateCudaArena(int ordinal, bool pinned, size_t max_bytes, ArenaExtendStrategy strategy,
                             bool stream_fences) {
  ArenaOptions options;
  options.stream_fences = stream_fences;
  options.max_bytes = max_bytes;
  options.extend_strategy = strategy;
  return std::make_shared<Arena>(std::make_shared<CudaAllocator>(ordinal, pinned), options);
}

}  // namespace tessera::cuda
