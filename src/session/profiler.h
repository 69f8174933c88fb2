// Profiler: a session's profile (SessionOptions::enable_profiling) as Chrome trace events, written as
// {"traceEvents":[...]} (see docs/PROFILING.md). Thread-safe: runs on several threads add events at
// once. Times are microseconds since the profiler was created (the session's creation).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/ep/execution_provider.h"

namespace tessera {

// One complete ("X") event.
struct TraceEvent {
  std::string name;
  std::string category;  // "Session", "Node", "Kernel"
  double ts_us = 0;      // start
  double dur_us = 0;
  int64_t tid = 0;
  std::string args_json;  // a JSON object ("{...}"); empty for none
};

// The device times of one run on one stream, waiting for DeviceTimer::Resolve.
struct DeviceRun {
  struct Step {
    std::string name, args_json;
    double host_begin_us;  // host time before the step's begin marker was queued (no later than the device reached it)
  };
  std::unique_ptr<DeviceTimer> timer;
  double start_us = 0;  // host time when the timer (its start marker) was created
  std::vector<Step> steps;  // one per BeginStep/EndStep pair
};

class Profiler {
 public:
  using Clock = std::chrono::steady_clock;

  // The file will be "<file_prefix>_<local date-time of now>.json".
  explicit Profiler(std::string file_prefix);

  double Now() const { return Since(Clock::now()); }
  double Since(Clock::time_point t) const { return std::chrono::duration<double, std::micro>(t - start_).count(); }
  uint64_t start_time_ns() const { return start_time_ns_; }
  bool active() const;

  // Both drop events once profiling has ended.
  void Add(TraceEvent event);
  void Add(std::vector<TraceEvent>& events);  // moves them out
  // Device runs are resolved once their streams have finished: `synchronized` says the run's streams
  // have; otherwise it waits, with earlier ones, for the next synchronized run or End.
  void AddDeviceRun(DeviceRun run, bool synchronized);
  // The thread id of the trace's timeline for a device stream named `track_name` (named in the trace).
  int64_t DeviceTrack(const std::string& track_name);

  // Resolves pending device runs (the caller has synchronized the streams), writes the file and returns
  // its path; later events are dropped. Throws kIo when the file cannot be written.
  std::string End();

  // The calling thread's id, as trace events show it.
  static int64_t ThreadId();

 private:
  void ResolvePending();
  std::string FilePath() const;
  std::string Json() const;

  const std::string file_prefix_;
  const Clock::time_point start_;
  const uint64_t start_time_ns_;
  const std::string date_time_;
  mutable std::mutex mutex_;
  bool ended_ = false;
  std::vector<TraceEvent> events_;
  std::vector<DeviceRun> pending_;
  std::vector<std::string> device_tracks_;  // index -> name; tid = kFirstDeviceTrack + index
  std::mutex resolve_mutex_;                // one resolver at a time (Resolve may block)
};

// Times the phases of session creation: each Mark(name) adds a "Session" event from the previous mark
// (or construction) to now when profiling, and logs the phase's milliseconds at verbose level.
class ProfilePhases {
 public:
  explicit ProfilePhases(Profiler* profiler) : profiler_(profiler), begin_(Profiler::Clock::now()) {}
  void Mark(const char* phase);

 private:
  Profiler* profiler_;
  Profiler::Clock::time_point begin_;
};

// `text` as a JSON string literal, quotes included.
std::string JsonString(const std::string& text);

}  // namespace tessera
