// CUDA streams and events as tessera::Stream / tessera::Event.
//
// A CudaStream is a non-blocking cudaStream_t on one GPU (it does not synchronize with the legacy
// default stream); native_handle() returns the cudaStream_t. A stream created around a caller's
// cudaStream_t (user_compute_stream) does not own it and never destroys it. Events are created with
// timing disabled; Wait is a device-side cudaStreamWaitEvent, so the host never blocks in it.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "tessera/stream.h"

namespace tessera::cuda {

class CudaStream : public Stream {
 public:
  // A new stream owned by this object.
  explicit CudaStream(int ordinal);
  // Wraps `borrowed`, which the caller keeps alive longer than this object.
  CudaStream(int ordinal, cudaStream_t borrowed);
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  void* native_handle() const override { return stream_; }
  void Synchronize() override;
  std::unique_ptr<Event> CreateEvent() override;
  const MemoryInfo& memory_info() const override { return info_; }
  cudaStream_t get() const { return stream_; }
  int ordinal() const { return ordinal_; }

 private:
  int ordinal_;
  MemoryInfo info_;
  cudaStream_t stream_ = nullptr;
  bool owned_;
};

// The cudaStream_t behind `stream` when it is a stream of CUDA device memory; throws
// Error(kInvalidArgument) naming `user` for any other kind of stream. nullptr stays nullptr.
cudaStream_t NativeStream(Stream* stream, const char* user);

}  // namespace tessera::cuda
