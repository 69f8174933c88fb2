#include "providers/cuda/cuda_stream.h"

#include "providers/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

class CudaEvent : public Event {
 public:
  explicit CudaEvent(int ordinal) : ordinal_(ordinal) {
    DeviceGuard guard(ordinal_);
    CheckCuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags on GPU ", ordinal_);
  }
  ~CudaEvent() override {
    if (cudaEventDestroy(event_) != cudaSuccess) cudaGetLastError();
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void Record(Stream& stream) override {
    DeviceGuard guard(ordinal_);
    CheckCuda(cudaEventRecord(event_, NativeStream(&stream, "Event::Record")), "cudaEventRecord on GPU ", ordinal_);
  }
  void Wait(Stream& stream) override {
    CheckCuda(cudaStreamWaitEvent(NativeStream(&stream, "Event::Wait"), event_, 0), "cudaStreamWaitEvent");
  }
  void Synchronize() override { CheckCuda(cudaEventSynchronize(event_), "cudaEventSynchronize on GPU ", ordinal_); }
  bool Query() override {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaSuccess) return true;
    if (status != cudaErrorNotReady) CheckCuda(status, "cudaEventQuery on GPU ", ordinal_);
    return false;
  }
  NativeSyncPoint native_point() const override { return {event_, 0}; }

 private:
  int ordinal_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace

CudaStream::CudaStream(int ordinal) : ordinal_(ordinal), info_(DeviceMemoryInfo(ordinal)), owned_(true) {
  DeviceGuard guard(ordinal_);
  CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags on GPU ", ordinal_);
}

void CudaStream::WaitNative(const NativeSyncPoint& point) {
  if (point.handle == nullptr)
    Fail(ErrorCode::kInvalidArgument, "CUDA stream: WaitNative needs a cudaEvent_t (the handle is null)");
  CheckCuda(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(point.handle), 0),
            "cudaStreamWaitEvent on an application's event");
}

CudaStream::CudaStream(int ordinal, cudaStream_t borrowed)
    : ordinal_(ordinal), info_(DeviceMemoryInfo(ordinal)), stream_(borrowed), owned_(false) {}

CudaStream::~CudaStream() {
  if (!kept_.empty()) {  // their copies must be over before the tensors go
    DeviceGuard guard(ordinal_);
    if (cudaStreamSynchronize(stream_) != cudaSuccess) cudaGetLastError();
  }
  for (Kept& k : kept_) spare_events_.push_back(k.event);
  kept_.clear();
  for (cudaEvent_t e : spare_events_)
    if (cudaEventDestroy(e) != cudaSuccess) cudaGetLastError();
  if (!owned_) return;
  // Destroying a stream with queued work is allowed: CUDA finishes the work, then releases it.
  if (cudaStreamDestroy(stream_) != cudaSuccess) cudaGetLastError();
}

void CudaStream::Synchronize() {
  CheckCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize on GPU ", ordinal_);
  std::vector<Tensor> released;
  std::lock_guard<std::mutex> lock(kept_mutex_);
  if (!kept_.empty()) CollectReachedLocked(released);
}

void CudaStream::CollectReachedLocked(std::vector<Tensor>& released) {
  // Entries of several threads may sit out of recording order: every one is asked.
  for (auto it = kept_.begin(); it != kept_.end();) {
    const cudaError_t status = cudaEventQuery(it->event);
    if (status == cudaErrorNotReady) {
      ++it;
      continue;
    }
    if (status != cudaSuccess) cudaGetLastError();  // the stream failed: its work is over either way
    for (Tensor& t : it->tensors) released.push_back(std::move(t));
    spare_events_.push_back(it->event);
    it = kept_.erase(it);
  }
}

void CudaStream::KeepUntilDone(std::vector<Tensor> tensors) {
  if (tensors.empty()) return;
  std::vector<Tensor> released;  // dropped after the lock is let go (freeing may take other locks)
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(kept_mutex_);
    CollectReachedLocked(released);
    if (!spare_events_.empty()) {
      event = spare_events_.back();
      spare_events_.pop_back();
    }
  }
  DeviceGuard guard(ordinal_);
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream_, &capturing) == cudaSuccess && capturing != cudaStreamCaptureStatusNone) {
    // The copies are part of a CUDA graph that replays them: whoever owns the graph keeps their tensors alive
    // (the session keeps every buffer a captured run touches, ExecutionProvider::BeginCapture).
    std::lock_guard<std::mutex> lock(kept_mutex_);
    if (event != nullptr) spare_events_.push_back(event);
    return;
  }
  cudaError_t status = event != nullptr ? cudaSuccess : cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (status == cudaSuccess) status = cudaEventRecord(event, stream_);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (event != nullptr) cudaEventDestroy(event);
    const cudaError_t waited = cudaStreamSynchronize(stream_);  // the tensors go once their work is over
    if (waited != cudaSuccess) cudaGetLastError();
    CheckCuda(status, "recording the event that keeps copied tensors alive on GPU ", ordinal_);
  }
  std::lock_guard<std::mutex> lock(kept_mutex_);
  kept_.push_back({event, std::move(tensors)});
}

size_t CudaStream::KeptGroups() const {
  std::lock_guard<std::mutex> lock(kept_mutex_);
  return kept_.size();
}

std::unique_ptr<Event> CudaStream::CreateEvent() { return std::make_unique<CudaEvent>(ordinal_); }

cudaStream_t NativeStream(Stream* stream, const char* user) {
  if (stream == nullptr) return nullptr;
  if (!IsCudaDeviceMemory(stream->memory_info()))
    Fail(ErrorCode::kInvalidArgument, user, ": a ", stream->memory_info().ToString(),
         " stream cannot order CUDA work (a CUDA stream is needed)");
  return static_cast<cudaStream_t>(stream->native_handle());
}

}  // namespace tessera::cuda
