// Copies between CUDA memory and host-readable memory: host <-> device, pinned <-> device,
// device <-> device on one GPU, and peer copies between two GPUs.
//
// With a stream (a CUDA stream, see NativeStream) the copies are queued on it with cudaMemcpyAsync /
// cudaMemcpyPeerAsync -- several copies within one GPU's memory of at most 4 MiB each as one batched copy kernel
// (kernels/copy_buffers.h) -- and may still run when Copy returns; the source and destination Tensors are
// kept alive until the stream has passed them (CudaStream::KeepUntilDone: no host callback stalls the
// stream). On a CUDA stream this EP did not create, Copy waits for the copies instead.
// Without a stream the copies have finished when Copy returns. CopyRegions does the same for 2-D regions.
#pragma once

#include "tessera/ep/data_transfer.h"

namespace tessera::cuda {

class CudaDataTransfer : public DataTransfer {
 public:
  // True when one side is CUDA memory and the other is CUDA memory too or host-readable.
  bool CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const override;
  // Throws kInvalidArgument for a pair CanCopy rejects, mismatched types or sizes, string tensors, or a
  // stream that is not a CUDA stream; kRuntime when CUDA reports an error.
  void Copy(std::span<const CopyPair> pairs, Stream* stream) override;
  // The pairs CanCopy takes but peer copies between two GPUs: cudaMemcpy2DAsync per region (from pinned memory
  // asynchronous, from pageable memory staged by the driver before the call returns).
  bool CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const override;
  void CopyRegions(std::span<const CopyRegion> regions, Stream* stream) override;
};

}  // namespace tessera::cuda
