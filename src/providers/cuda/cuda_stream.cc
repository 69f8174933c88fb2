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

 private:
  int ordinal_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace

CudaStream::CudaStream(int ordinal) : ordinal_(ordinal), info_(DeviceMemoryInfo(ordinal)), owned_(true) {
  DeviceGuard guard(ordinal_);
  CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags on GPU ", ordinal_);
}

CudaStream::CudaStream(int ordinal, cudaStream_t borrowed)
    : ordinal_(ordinal), info_(DeviceMemoryInfo(ordinal)), stream_(borrowed), owned_(false) {}

CudaStream::~CudaStream() {
  if (!owned_) return;
  // Destroying a stream with queued work is allowed: CUDA finishes the work, then releases it.
  if (cudaStreamDestroy(stream_) != cudaSuccess) cudaGetLastError();
}

void CudaStream::Synchronize() { CheckCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize on GPU ", ordinal_); }

std::unique_ptr<Event> CudaStream::CreateEvent() { return std::make_unique<CudaEvent>(ordinal_); }

cudaStream_t NativeStream(Stream* stream, const char* user) {
  if (stream == nullptr) return nullptr;
  if (!IsCudaDeviceMemory(stream->memory_info()))
    Fail(ErrorCode::kInvalidArgument, user, ": a ", stream->memory_info().ToString(),
         " stream cannot order CUDA work (a CUDA stream is needed)");
  return static_cast<cudaStream_t>(stream->native_handle());
}

}  // namespace tessera::cuda
