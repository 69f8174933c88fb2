#include "providers/cuda/step_graphs.h"

#include "providers/cuda/cuda_graph.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "tessera/ep/logging.h"
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

StepKey& StepKey::AddShape(const Shape& shape) {
  uint64_t hash = 1469598103934665603ull ^ shape.rank();
  for (int64_t d : shape.dims()) {
    hash ^= static_cast<uint64_t>(d);
    hash *= 1099511628211ull;
  }
  return Add(hash);
}

struct StepGraphs::Entry {
  enum State : int { kSeenOnce, kCapturing, kReady, kNotCapturable };
  explicit Entry(const StepKey& k, uint64_t tick) : key(k), last_use(tick) {}
  ~Entry() {
    // A graph still running on the device is freed when it completes (cuGraphExecDestroy's contract).
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
  const StepKey key;
  std::atomic<uint64_t> last_use;
  std::atomic<int> state{kSeenOnce};
  cudaGraphExec_t exec = nullptr;  // set before state becomes kReady (release), read after seeing it (acquire)
  std::mutex launch_mutex;         // an executable graph is launched by one thread at a time
};

StepGraphs::~StepGraphs() = default;

bool StepGraphs::Enabled(const CudaExecutionProvider& ep, cudaStream_t stream) {
  const CudaProviderOptions& options = ep.options();
  if (!options.step_graphs || options.enable_cuda_graph || stream == nullptr) return false;
  if (WholeRunCaptureOnThisThread()) return false;  // the session records the whole run (automatic graphs)
  if (options.user_compute_stream == nullptr) return true;
  // The caller may be capturing its own stream: the work then goes into the caller's graph directly.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &capture) == cudaSuccess && capture == cudaStreamCaptureStatusNone;
}

void StepGraphs::RunErased(const KernelContext& ctx, const CudaExecutionProvider& ep,
                           const LibraryHandles::Lease* lease, const StepKey& key, StepLibrary library,
                           const WorkRef& work) const {
  if (!Enabled(ep, key.stream)) {
    work(key.stream, lease);
    return;
  }
  const uint64_t tick = ticks_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<Entry> entry;
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);  // every step: concurrent runs look up together
    for (const auto& e : entries_)
      if (e->key == key) {
        entry = e;
        break;
      }
  }
  if (entry == nullptr) {  // first sighting: remembered, queued directly
    Remember(key, tick);
    work(key.stream, lease);
    return;
  }
  entry->last_use.store(tick, std::memory_order_relaxed);
  int state = entry->state.load(std::memory_order_acquire);
  if (state == Entry::kSeenOnce && !OnProbation()) {
    int expected = Entry::kSeenOnce;
    if (entry->state.compare_exchange_strong(expected, Entry::kCapturing, std::memory_order_acq_rel)) {
      entry->exec = Capture(ep, library, work);
      if (entry->exec == nullptr) {
        Log(LogLevel::kVerbose, ctx.node().Describe(), ": the step cannot be captured into a graph; it is queued directly");
        entry->state.store(Entry::kNotCapturable, std::memory_order_release);
      } else {
        captures_.fetch_add(1, std::memory_order_relaxed);
        Log(LogLevel::kVerbose, ctx.node().Describe(), ": step graph captured");
        entry->state.store(Entry::kReady, std::memory_order_release);
      }
    }
    state = entry->state.load(std::memory_order_acquire);
  }
  if (state != Entry::kReady) {  // not capturable, being captured by another run, or capturing has stopped
    work(key.stream, lease);
    return;
  }
  std::lock_guard<std::mutex> launch(entry->launch_mutex);
  const cudaError_t launched = cudaGraphLaunch(entry->exec, key.stream);
  if (launched != cudaSuccess) CheckCuda(launched, ctx.node(), ": cudaGraphLaunch (step graph)");
  replays_.fetch_add(1, std::memory_order_relaxed);
}

bool StepGraphs::OnProbation() const {
  const size_t captured = captures_.load(std::memory_order_relaxed);
  return captured >= kCaptureProbation && replays_.load(std::memory_order_relaxed) < captured * kMinReplaysPerCapture;
}

void StepGraphs::Remember(const StepKey& key, uint64_t tick) const {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  for (const auto& e : entries_)
    if (e->key == key) return;  // another run of the same key got here first
  if (entries_.size() == kMaxEntries) {
    // Keys seen once go first, so that keys which never repeat do not push out the graphs of those that do.
    auto victim = entries_.end();
    for (bool graphs_too : {false, true}) {
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (!graphs_too && (*it)->state.load(std::memory_order_relaxed) != Entry::kSeenOnce) continue;
        if (victim == entries_.end() ||
            (*it)->last_use.load(std::memory_order_relaxed) < (*victim)->last_use.load(std::memory_order_relaxed))
          victim = it;
      }
      if (victim != entries_.end()) break;
    }
    entries_.erase(victim);  // a run still holding it keeps it alive until its launch returns
  }
  entries_.push_back(std::make_shared<Entry>(key, tick));
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
  std::optional<LibraryHandles::Lease> capture_lease;
  if (library != StepLibrary::kNone) {
    capture_lease.emplace(ep.handles().Acquire(capture.stream_));
    try {  // creating a handle allocates, which the capture would not allow
      if (library == StepLibrary::kCudnn) capture_lease->cudnn();
      if (library == StepLibrary::kCublasLt) capture_lease->cublas_lt();
    } catch (const Error&) {
      return nullptr;
    }
  }
  // Thread-local mode: other threads' calls (allocations of concurrent runs) are not affected by this capture.
  if (cudaStreamBeginCapture(capture.stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  bool queued = true;
  try {
    work(capture.stream_, capture_lease ? &*capture_lease : nullptr);
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
