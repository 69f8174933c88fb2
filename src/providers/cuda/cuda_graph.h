// CUDA graphs of whole session runs (enable_cuda_graph): one executable graph per graph key.
//
// Begin starts a capture of the run's stream in thread-local mode (only the capturing thread is held to
// capture-safe calls); End finishes it and instantiates the graph under its key, replacing and destroying
// any graph captured before under that key; Replay launches it on a stream. The session keeps every
// buffer the recorded kernels touch alive, so a graph stays valid until it is replaced or the EP is
// destroyed (which destroys all of them).
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

namespace tessera::cuda {

// Whether the calling thread is between CudaGraphSet::Begin and End (a whole run being recorded): kernels then
// queue their work directly (no step graphs) and refuse work a graph cannot replay (copies from pageable host
// memory that is gone when the graph replays).
bool WholeRunCaptureOnThisThread();
// Copies `bytes` from host memory to device memory now, synchronously, outside any capture on this thread: for
// values computed on the host from shapes alone, which are the same on every replay of a graph captured for
// those shapes. The destination must live as long as the graph (a captured run's allocations do).
void UploadOutsideCapture(void* device_dst, const void* host_src, size_t bytes);

class CudaGraphSet {
 public:
  explicit CudaGraphSet(int ordinal) : ordinal_(ordinal) {}
  ~CudaGraphSet();
  CudaGraphSet(const CudaGraphSet&) = delete;
  CudaGraphSet& operator=(const CudaGraphSet&) = delete;

  void Begin(cudaStream_t stream, int key);
  // Throws Error(kRuntime) naming the key when the capture was invalidated (a kernel made a call that
  // cannot be captured) or the graph cannot be instantiated; the stream is out of capture mode either way.
  void End(cudaStream_t stream, int key);
  // Throws Error(kInvalidArgument) when nothing was captured under `key`.
  void Replay(cudaStream_t stream, int key) const;
  // Destroys the graph captured under `key`, if any; its launches must have completed.
  void Release(int key);

 private:
  int ordinal_;
  mutable std::mutex mutex_;
  std::map<int, cudaGraphExec_t> graphs_;
};

}  // namespace tessera::cuda
