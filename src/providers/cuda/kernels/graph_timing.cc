#include "providers/cuda/kernels/graph_timing.h"

#include <limits>

#include "tessera/status.h"

namespace tessera::cuda {

namespace {

struct Event {
  cudaEvent_t event = nullptr;
  Event() {
    if (cudaEventCreate(&event) != cudaSuccess) event = nullptr;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (event != nullptr) cudaEventDestroy(event);
  }
};

}  // namespace

float TimeCapturedCalls(cudaStream_t stream, int runs, const std::function<void(cudaStream_t)>& enqueue) {
  constexpr float kUnusable = std::numeric_limits<float>::infinity();
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return kUnusable;
  }
  bool queued = true;
  try {
    for (int i = 0; i < runs; ++i) enqueue(stream);
  } catch (const Error&) {
    queued = false;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  cudaGraphExec_t exec = nullptr;
  if (!queued || ended != cudaSuccess || graph == nullptr || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // capture failures are not sticky; clear the status for later launches
    return kUnusable;
  }
  Event start, stop;
  float ms = kUnusable;
  if (start.event != nullptr && stop.event != nullptr && cudaGraphLaunch(exec, stream) == cudaSuccess &&
      cudaEventRecord(start.event, stream) == cudaSuccess && cudaGraphLaunch(exec, stream) == cudaSuccess &&
      cudaEventRecord(stop.event, stream) == cudaSuccess && cudaEventSynchronize(stop.event) == cudaSuccess &&
      cudaEventElapsedTime(&ms, start.event, stop.event) == cudaSuccess) {
    ms /= static_cast<float>(runs);
  } else {
    cudaGetLastError();
    ms = kUnusable;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return ms;
}

}  // namespace tessera::cuda
