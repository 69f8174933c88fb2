#include "providers/cuda/step_graphs.h"

#include <algorithm>
#include <cstring>

#include "core/logging.h"
#include "providers/cuda/cuda_common.h"
#include "providers/cuda/cuda_ep.h"

namespace tessera::cuda {

StepCaptureStream::~StepCaptureStream() {
  if (stream_ != nullptr) {
    DeviceGuard guard(ordinal_);
    cudaStreamDestroy(stream_);
  }
}

StepKey& StepKey::Add(uint64_t value) {
  if (size == kWords) Fail(ErrorCode::kRuntime, "StepKey holds at most ", kWords, " values");
  words[size++] = value;
  return *this;
}

StepKey& StepKey::AddFloat(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return Add(uint64_t{bits});
}

struct StepGraphs::Entry {
  explicit Entry(const StepKey& k) : key(k) {}
  ~Entry() {
    // A graph still running on the device is freed when it completes (cuGraphExecDestroy's contract).
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
  StepKey key;
  bool capturable = true;
  cudaGraphExec_t exec = nullptr;
  std::mutex launch_mutex;  // an executable graph is launched by one thread at a time
};

StepGraphs::~StepGraphs() = default;

bool StepGraphs::Enabled(const CudaExecutionProvider& ep, cudaStream_t stream) {
  const CudaProviderOptions& options = ep.options();
  if (!options.step_graphs || options.enable_cuda_graph || stream == nullptr) return false;
  if (options.user_compute_stream == nullptr) return true;
  // The caller may be capturing its own stream: the work then goes into the caller's graph directly.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &capture) == cudaSuccess && capture == cudaStreamCaptureStatusNone;
}

void StepGraphs::RunErased(const KernelContext& ctx, const CudaExecutionProvider& ep,
                           const LibraryHandles::Lease& lease, const StepKey& key, StepLibrary library,
                           const WorkRef& work) const {
  if (!Enabled(ep, key.stream)) {
    work(key.stream, lease);
    return;
  }
  std::shared_ptr<Entry> entry;
  cudaGraphExec_t exec = nullptr;
  bool capture = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e->key == key; });
    if (it == entries_.end()) {
      if (entries_.size() == kMaxEntries) entries_.erase(entries_.begin());
      entries_.push_back(std::make_shared<Entry>(key));
    } else {
      std::rotate(it, it + 1, entries_.end());
      entry = entries_.back();
      exec = entry->exec;
      const size_t captured = captures_.load(std::memory_order_relaxed);
      const bool on_probation = captured >= kCaptureProbation &&
                                replays_.load(std::memory_order_relaxed) < captured * kMinReplaysPerCapture;
      capture = exec == nullptr && entry->capturable && !on_probation;
    }
  }
  if (capture) {
    cudaGraphExec_t made = Capture(ep, library, work);
    std::lock_guard<std::mutex> lock(mutex_);
    if (made == nullptr) {
      entry->capturable = false;
      Log(LogLevel::kVerbose, ctx.node().Describe(), ": the step cannot be captured into a graph; it is queued directly");
    } else if (entry->exec == nullptr) {
      entry->exec = made;
      captures_.fetch_add(1, std::memory_order_relaxed);
      Log(LogLevel::kVerbose, ctx.node().Describe(), ": step graph captured");
    } else {
      cudaGraphExecDestroy(made);  // another run on the same stream captured it first
    }
    exec = entry->exec;
  }
  if (exec == nullptr) {  // first sighting, or not capturable
    work(key.stream, lease);
    return;
  }
  std::lock_guard<std::mutex> launch(entry->launch_mutex);
  const cudaError_t launched = cudaGraphLaunch(exec, key.stream);
  if (launched != cudaSuccess) CheckCuda(launched, ctx.node(), ": cudaGraphLaunch (step graph)");
  replays_.fetch_add(1, std::memory_order_relaxed);
}

cudaGraphExec_t StepGraphs::Capture(const CudaExecutionProvider& ep, StepLibrary library, const WorkRef& work) {
  StepCaptureStream& capture = ep.step_capture();
  std::lock_guard<std::mutex> lock(capture.mutex_);
  if (capture.stream_ == nullptr &&
      cudaStreamCreateWithFlags(&capture.stream_, cudaStreamNonBlocking) != cudaSuccess) {
    capture.stream_ = nullptr;
    cudaGetLastError();
    return nullptr;
  }
  LibraryHandles::Lease capture_lease = ep.handles().Acquire(capture.stream_);
  try {  // creating a handle allocates, which the capture would not allow
    if (library == StepLibrary::kCudnn) capture_lease.cudnn();
    if (library == StepLibrary::kCublasLt) capture_lease.cublas_lt();
  } catch (const Error&) {
    return nullptr;
  }
  // Thread-local mode: other threads' calls (allocations of concurrent runs) are not affected by this capture.
  if (cudaStreamBeginCapture(capture.stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  bool queued = true;
  try {
    work(capture.stream_, capture_lease);
  } catch (const Error&) {
    queued = false;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capture.stream_, &graph);
  cudaGraphExec_t exec = nullptr;
  if (!queued || ended != cudaSuccess || graph == nullptr || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
    exec = nullptr;
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();  // a failed capture is not sticky; clear the status for later calls
  return exec;
}

}  // namespace tessera::cuda
