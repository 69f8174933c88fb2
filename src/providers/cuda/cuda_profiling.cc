#include "providers/cuda/cuda_profiling.h"

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "providers/cuda/cuda_common.h"
#include "providers/cuda/cuda_stream.h"

namespace tessera::cuda {

// Timing events (cudaEventDefault), kept per GPU for reuse by later runs.
class CudaEventPool {
 public:
  ~CudaEventPool() {
    for (auto& [ordinal, events] : free_)
      for (cudaEvent_t e : events)
        if (cudaEventDestroy(e) != cudaSuccess) cudaGetLastError();
  }

  cudaEvent_t Acquire(int ordinal) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<cudaEvent_t>& events = free_[ordinal];
      if (!events.empty()) {
        cudaEvent_t e = events.back();
        events.pop_back();
        return e;
      }
    }
    DeviceGuard guard(ordinal);
    cudaEvent_t e = nullptr;
    CheckCuda(cudaEventCreateWithFlags(&e, cudaEventDefault), "profiling: cudaEventCreateWithFlags on GPU ", ordinal);
    return e;
  }

  void Release(int ordinal, const std::vector<cudaEvent_t>& events) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<cudaEvent_t>& pool = free_[ordinal];
    for (cudaEvent_t e : events)
      if (e != nullptr) pool.push_back(e);
  }

 private:
  std::mutex mutex_;
  std::map<int, std::vector<cudaEvent_t>> free_;
};

namespace {

bool NvtxRequested() {
  if (const char* forced = std::getenv("TESSERA_NVTX"); forced != nullptr && *forced != '\0')
    return std::string_view(forced) != "0";
  const char* injection = std::getenv("NVTX_INJECTION64_PATH");
  return injection != nullptr && *injection != '\0';
}

bool Capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CheckCuda(cudaStreamIsCapturing(stream, &status), "profiling: cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

// events_[0] marks the run's start; events_[1 + 2i] and events_[2 + 2i] step i. A null event was not
// recorded (the stream was being captured).
class CudaTimer : public DeviceTimer {
 public:
  CudaTimer(std::shared_ptr<CudaEventPool> pool, int ordinal, cudaStream_t stream)
      : pool_(std::move(pool)), ordinal_(ordinal), stream_(stream) {
    char name[64];
    std::snprintf(name, sizeof(name), "CUDA stream %p (GPU %d)", static_cast<void*>(stream), ordinal);
    track_name_ = name;
    Mark();
  }
  ~CudaTimer() override { pool_->Release(ordinal_, events_); }
  CudaTimer(const CudaTimer&) = delete;
  CudaTimer& operator=(const CudaTimer&) = delete;

  void BeginStep() override { Mark(); }
  void EndStep() override { Mark(); }

  std::vector<Interval> Resolve() override {
    std::vector<Interval> intervals((events_.size() - 1) / 2);
    cudaEvent_t last = nullptr;
    for (cudaEvent_t e : events_)
      if (e != nullptr) last = e;
    if (events_[0] == nullptr || last == nullptr) return intervals;
    CheckCuda(cudaEventSynchronize(last), "profiling: cudaEventSynchronize on GPU ", ordinal_);
    for (size_t i = 0; i < intervals.size(); ++i) {
      cudaEvent_t begin = events_[1 + 2 * i], end = events_[2 + 2 * i];
      if (begin == nullptr || end == nullptr) continue;
      intervals[i] = {MicrosSinceStart(begin), MicrosSinceStart(end)};
    }
    return intervals;
  }

  std::string track_name() const override { return track_name_; }

 private:
  void Mark() {
    if (Capturing(stream_)) {
      events_.push_back(nullptr);
      return;
    }
    cudaEvent_t e = pool_->Acquire(ordinal_);
    events_.push_back(e);
    DeviceGuard guard(ordinal_);
    CheckCuda(cudaEventRecord(e, stream_), "profiling: cudaEventRecord on GPU ", ordinal_);
  }

  double MicrosSinceStart(cudaEvent_t e) const {
    float ms = 0;
    CheckCuda(cudaEventElapsedTime(&ms, events_[0], e), "profiling: cudaEventElapsedTime on GPU ", ordinal_);
    return static_cast<double>(ms) * 1000.0;
  }

  std::shared_ptr<CudaEventPool> pool_;
  int ordinal_;
  cudaStream_t stream_;
  std::string track_name_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace

CudaProfiling::CudaProfiling() : nvtx_(NvtxRequested()), events_(std::make_shared<CudaEventPool>()) {}

CudaProfiling::~CudaProfiling() = default;

uint32_t CudaProfiling::flags() const { return kEpProfiling | (nvtx_ ? kEpRunHooks | kEpStepHooks : 0u); }

void CudaProfiling::RunStart(const std::string& run_tag) const {
  if (!nvtx_) return;
  const std::string name = run_tag.empty() ? std::string("tessera run") : "tessera run " + run_tag;
  nvtxRangePushA(name.c_str());
}

void CudaProfiling::RunEnd() const {
  if (nvtx_) nvtxRangePop();
}

void CudaProfiling::StepBegin(const Node& node) const {
  if (!nvtx_) return;
  std::string name = node.op_type;
  name += ' ';
  name += node.name;
  nvtxRangePushA(name.c_str());
}

void CudaProfiling::StepEnd() const {
  if (nvtx_) nvtxRangePop();
}

std::unique_ptr<DeviceTimer> CudaProfiling::CreateTimer(Stream& stream) {
  return std::make_unique<CudaTimer>(events_, OrdinalOf(stream.memory_info()), NativeStream(&stream, "CreateDeviceTimer"));
}

}  // namespace tessera::cuda
