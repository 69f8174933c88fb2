// What cuDNN and cuBLAS cost a process the first time they are called: the first convolution loads cuDNN's
// sub-libraries and engines (65-290 ms on an H100, bench/results/gpu-2026-11-28-session26), and each new kind of
// call (float16 NHWC, fused with bias and ReLU) loads more; the first GEMM loads cuBLAS's kernels (100-150 ms). A
// session paid these one after the other in its preparation runs. LibraryWarmup makes the kinds of call sessions
// start with -- small cuDNN convolutions (float16 and float32, NHWC and NCHW, 1x1 and 3x3, plain and fused) and
// cuBLASLt products (float32, TF32, float16) -- on worker threads of its own (five), started when the EP is created, so
// that the loads run at the same time as each other and as the session's own preparation. The session waits for
// them when its creation ends (ExecutionProvider::OnSessionReady), so that none competes with the caller's runs.
//
// Once per process and device: the first EP of a GPU starts them; later EPs find them done or in flight. The calls
// use a stream, handles and a few MB of device memory of their own (not the EP's arena), and errors are logged at
// verbose level and otherwise ignored: the session's own first calls report anything real. The destructor waits for
// the threads it started too (an EP destroyed during its warm-up waits for it).
#pragma once

#include <thread>
#include <vector>

namespace tessera::cuda {

class LibraryWarmup {
 public:
  // Starts the warm-up on GPU `ordinal` unless this process already did (or `enabled` is false).
  LibraryWarmup(int ordinal, bool enabled);
  ~LibraryWarmup();
  // Waits for the calls this object started (none: returns at once). Not thread-safe: the EP calls it from the
  // session's creation, before any run of the caller's.
  void Wait();
  LibraryWarmup(const LibraryWarmup&) = delete;
  LibraryWarmup& operator=(const LibraryWarmup&) = delete;

 private:
  std::vector<std::thread> threads_;
};

}  // namespace tessera::cuda
