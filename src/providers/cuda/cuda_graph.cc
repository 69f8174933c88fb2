#include "providers/cuda/cuda_graph.h"

#include "providers/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {
thread_local bool t_capturing = false;
}  // namespace

bool WholeRunCaptureOnThisThread() { return t_capturing; }

void UploadOutsideCapture(void* device_dst, const void* host_src, size_t bytes) {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;  // a synchronous copy is not part of the graph
  cudaThreadExchangeStreamCaptureMode(&mode);
  const cudaError_t copied = cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice);
  cudaThreadExchangeStreamCaptureMode(&mode);
  CheckCuda(copied, kEpName, ": copying ", bytes, " bytes of host values for a captured run");
}

CudaGraphSet::~CudaGraphSet() {
  for (auto& [key, exec] : graphs_)
    if (cudaGraphExecDestroy(exec) != cudaSuccess) cudaGetLastError();
}

void CudaGraphSet::Begin(cudaStream_t stream, int key) {
  DeviceGuard guard(ordinal_);
  CheckCuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), kEpName,
            ": cannot start capturing graph ", key, " on GPU ", ordinal_);
  t_capturing = true;
}

void CudaGraphSet::End(cudaStream_t stream, int key) {
  DeviceGuard guard(ordinal_);
  t_capturing = false;
  cudaGraph_t graph = nullptr;
  CheckCuda(cudaStreamEndCapture(stream, &graph), kEpName, ": capturing graph ", key,
            " failed (a kernel of the run made a call that a CUDA graph cannot record)");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CheckCuda(instantiated, kEpName, ": cudaGraphInstantiate of graph ", key);
  // Upload now so that the first replay does not pay for it.
  CheckCuda(cudaGraphUpload(exec, stream), kEpName, ": cudaGraphUpload of graph ", key);
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = graphs_.emplace(key, exec);
  if (!inserted) {
    if (cudaGraphExecDestroy(it->second) != cudaSuccess) cudaGetLastError();
    it->second = exec;
  }
}

void CudaGraphSet::Release(int key) {
  cudaGraphExec_t exec = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = graphs_.find(key);
    if (it == graphs_.end()) return;
    exec = it->second;
    graphs_.erase(it);
  }
  DeviceGuard guard(ordinal_);
  if (cudaGraphExecDestroy(exec) != cudaSuccess) cudaGetLastError();
}

void CudaGraphSet::Replay(cudaStream_t stream, int key) const {
  cudaGraphExec_t exec = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = graphs_.find(key);
    if (it == graphs_.end()) Fail(ErrorCode::kInvalidArgument, kEpName, ": no CUDA graph was captured under key ", key);
    exec = it->second;
  }
  DeviceGuard guard(ordinal_);
  CheckCuda(cudaGraphLaunch(exec, stream), kEpName, ": cudaGraphLaunch of graph ", key);
}

}  // namespace tessera::cuda
