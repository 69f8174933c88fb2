#include "providers/testing/testing_timer.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <vector>

namespace tessera::testing_ep {

namespace {

// Marker times, written by the stream's worker; shared with the queued markers, which may outlive the timer.
struct MarkerTimes {
  std::mutex mutex;
  std::condition_variable reached_cv;
  std::vector<double> us;  // per marker: steady-clock microseconds when reached; -1 until then or when skipped
  size_t queued = 0;
  size_t reached = 0;
};

double SteadyMicros() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class TestingTimer : public DeviceTimer {
 public:
  explicit TestingTimer(TestingStream& stream) : stream_(stream), times_(std::make_shared<MarkerTimes>()) {
    char name[64];
    std::snprintf(name, sizeof(name), "TestingExecutionProvider stream %p", static_cast<void*>(&stream));
    track_name_ = name;
    Mark();  // the run's start
  }

  void BeginStep() override { Mark(); }
  void EndStep() override { Mark(); }

  std::vector<Interval> Resolve() override {
    std::unique_lock<std::mutex> lock(times_->mutex);
    times_->reached_cv.wait(lock, [&] { return times_->reached >= times_->queued; });
    const std::vector<double>& us = times_->us;
    std::vector<Interval> intervals((us.size() - 1) / 2);
    if (us[0] < 0) return intervals;
    for (size_t i = 0; i < intervals.size(); ++i) {
      const double begin = us[1 + 2 * i], end = us[2 + 2 * i];
      if (begin >= 0 && end >= 0) intervals[i] = {begin - us[0], end - us[0]};
    }
    return intervals;
  }

  std::string track_name() const override { return track_name_; }

 private:
  void Mark() {
    size_t index;
    {
      std::lock_guard<std::mutex> lock(times_->mutex);
      index = times_->us.size();
      times_->us.push_back(-1);
      if (stream_.recording()) return;
      ++times_->queued;
    }
    stream_.Enqueue([times = times_, index] {
      const double now = SteadyMicros();
      {
        std::lock_guard<std::mutex> lock(times->mutex);
        times->us[index] = now;
        ++times->reached;
      }
      times->reached_cv.notify_all();
    });
  }

  TestingStream& stream_;
  std::shared_ptr<MarkerTimes> times_;
  std::string track_name_;
};

}  // namespace

std::unique_ptr<DeviceTimer> CreateTestingTimer(TestingStream& stream) { return std::make_unique<TestingTimer>(stream); }

}  // namespace tessera::testing_ep
