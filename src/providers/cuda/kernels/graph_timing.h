// Timing search candidates the way whole-model graphs run them: `runs` calls captured into one CUDA graph, the
// graph launched once to warm up and once between two events. Timing calls queued one by one would measure how
// fast the host queues them (microseconds per library call, often more than the GPU needs) and favour the
// candidates with the least host work.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace tessera::cuda {

// GPU milliseconds per call of `enqueue` (which queues one call on the stream it is given), or infinity when the
// calls cannot be captured or run (an enqueue that throws tessera::Error counts as such). `stream` must not be
// capturing already, nor be the legacy default stream. Blocks until the timed launch has finished.
float TimeCapturedCalls(cudaStream_t stream, int runs, const std::function<void(cudaStream_t)>& enqueue);

}  // namespace tessera::cuda
