// CUDA streams and events as tessera::Stream / tessera::Event.
//
// A CudaStream is a non-blocking cudaStream_t on one GPU (it does not synchronize with the legacy
// default stream); native_handle() returns the cudaStream_t. A stream created around a caller's
// cudaStream_t (user_compute_stream) does not own it and never destroys it. Events are created with
// timing disabled; Wait is a device-side cudaStreamWaitEvent, so the host never blocks in it.
//
// KeepUntilDone holds tensors that queued work still reads or writes (the operands of asynchronous copies)
// until the stream has passed that work: an event is recorded, and the tensors are dropped by a later
// KeepUntilDone or Synchronize on the stream that finds the event reached, or by the destructor after a wait.
// Tensors are thus released on an ordinary calling thread (freeing device memory there is allowed), and the
// stream never stalls on a host callback. Operands of copies captured into a CUDA graph are not held: the graph's
// owner keeps them (the session keeps every buffer a captured run touches).
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "tessera/stream.h"
#include "tessera/tensor.h"

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
  // Later work waits for the application's cudaEvent_t (point.handle): cudaStreamWaitEvent.
  void WaitNative(const NativeSyncPoint& point) override;
  cudaStream_t get() const { return stream_; }
  int ordinal() const { return ordinal_; }

  // Keeps `tensors` alive until the work queued on this stream so far has completed (see above). Throws
  // kRuntime when the event cannot be recorded, after waiting for the stream (the tensors are then released).
  void KeepUntilDone(std::vector<Tensor> tensors);
  // How many groups of tensors are still held (tests).
  size_t KeptGroups() const;

 private:
  struct Kept {
    cudaEvent_t event;
    std::vector<Tensor> tensors;
  };
  // Moves the tensors of reached entries into `released` and their events to spare_events_; kept_mutex_ held.
  void CollectReachedLocked(std::vector<Tensor>& released);

  int ordinal_;
  MemoryInfo info_;
  cudaStream_t stream_ = nullptr;
  bool owned_;
  mutable std::mutex kept_mutex_;
  std::deque<Kept> kept_;
  std::vector<cudaEvent_t> spare_events_;
};

// The cudaStream_t behind `stream` when it is a stream of CUDA device memory; throws
// Error(kInvalidArgument) naming `user` for any other kind of stream. nullptr stays nullptr.
cudaStream_t NativeStream(Stream* stream, const char* user);

}  // namespace tessera::cuda
