#include "session/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "core/logging.h"
#include "tessera/status.h"

namespace tessera {

namespace {

// Device timelines get thread ids far above Linux thread ids (pid_max is at most 2^22).
constexpr int64_t kFirstDeviceTrack = int64_t{1} << 30;

std::string LocalDateTime(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d_%H-%M-%S", &local);
  return text;
}

uint64_t NanosSinceEpoch(std::chrono::system_clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

std::string Micros(double us) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", us);
  return text;
}

void AppendEvent(std::string& out, const TraceEvent& e, int64_t pid) {
  out += "{\"ph\":\"X\",\"cat\":" + JsonString(e.category) + ",\"name\":" + JsonString(e.name) +
         ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(e.tid) + ",\"ts\":" + Micros(e.ts_us) +
         ",\"dur\":" + Micros(e.dur_us) + ",\"args\":" + (e.args_json.empty() ? std::string("{}") : e.args_json) + "}";
}

void AppendMetadata(std::string& out, const char* what, int64_t pid, int64_t tid, const std::string& name) {
  out += std::string("{\"ph\":\"M\",\"name\":\"") + what + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + JsonString(name) + "}}";
}

// Device intervals lie on the host timeline as early as possible given that the start marker was
// queued at run.start_us and that no step begins on the device before the host began queuing it.
std::vector<TraceEvent> PlaceDeviceRun(DeviceRun& run, const std::vector<DeviceTimer::Interval>& times, int64_t tid) {
  const size_t n = std::min(times.size(), run.steps.size());
  double offset = run.start_us;
  for (size_t i = 0; i < n; ++i)
    if (times[i].measured()) offset = std::max(offset, run.steps[i].host_begin_us - times[i].begin_us);
  std::vector<TraceEvent> events;
  for (size_t i = 0; i < n; ++i) {
    if (!times[i].measured()) continue;
    DeviceRun::Step& step = run.steps[i];
    events.push_back({std::move(step.name), "Kernel", offset + times[i].begin_us, times[i].end_us - times[i].begin_us,
                      tid, std::move(step.args_json)});
  }
  return events;
}

}  // namespace

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

Profiler::Profiler(std::string file_prefix)
    : file_prefix_(std::move(file_prefix)),
      start_(Clock::now()),
      start_time_ns_(NanosSinceEpoch(std::chrono::system_clock::now())),
      date_time_(LocalDateTime(std::chrono::system_clock::now())) {}

int64_t Profiler::ThreadId() { return static_cast<int64_t>(gettid()); }

bool Profiler::active() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !ended_;
}

void Profiler::Add(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ended_) events_.push_back(std::move(event));
}

void Profiler::Add(std::vector<TraceEvent>& events) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ended_) return;
  for (TraceEvent& e : events) events_.push_back(std::move(e));
  events.clear();
}

int64_t Profiler::DeviceTrack(const std::string& track_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(device_tracks_.begin(), device_tracks_.end(), track_name);
  if (it == device_tracks_.end()) it = device_tracks_.insert(device_tracks_.end(), track_name);
  return kFirstDeviceTrack + (it - device_tracks_.begin());
}

void Profiler::AddDeviceRun(DeviceRun run, bool synchronized) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_) return;
    pending_.push_back(std::move(run));
  }
  if (synchronized) ResolvePending();
}

void Profiler::ResolvePending() {
  std::lock_guard<std::mutex> resolving(resolve_mutex_);
  std::vector<DeviceRun> runs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    runs.swap(pending_);
  }
  for (DeviceRun& run : runs) {
    const std::vector<DeviceTimer::Interval> times = run.timer->Resolve();  // may wait for the device
    std::vector<TraceEvent> events = PlaceDeviceRun(run, times, DeviceTrack(run.timer->track_name()));
    Add(events);
  }
}

std::string Profiler::End() {
  ResolvePending();
  std::string json;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_) return "";
    ended_ = true;
    json = Json();
    events_.clear();
  }
  const std::string path = FilePath();
  std::ofstream file(path, std::ios::binary);
  file << json;
  file.close();
  if (!file) Fail(ErrorCode::kIo, "cannot write the profile to '", path, "'");
  return path;
}

std::string Profiler::FilePath() const {
  const std::string base = file_prefix_ + "_" + date_time_;
  std::string path = base + ".json";
  for (int n = 2; std::filesystem::exists(path); ++n) path = base + "_" + std::to_string(n) + ".json";
  return path;
}

std::string Profiler::Json() const {
  std::vector<const TraceEvent*> sorted;
  for (const TraceEvent& e : events_) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const TraceEvent* a, const TraceEvent* b) { return a->ts_us < b->ts_us; });
  const int64_t pid = getpid();
  // The metadata (track names) shares the first line with the opening bracket, so that every later line but the
  // last is one complete ("X") event, the layout onnxruntime's profiles have and tools written for them read.
  std::string out = "{\"traceEvents\":[";
  AppendMetadata(out, "process_name", pid, 0, "tessera");
  for (size_t i = 0; i < device_tracks_.size(); ++i) {
    out += ",";
    AppendMetadata(out, "thread_name", pid, kFirstDeviceTrack + static_cast<int64_t>(i), device_tracks_[i]);
  }
  for (const TraceEvent* e : sorted) {
    out += ",\n";
    AppendEvent(out, *e, pid);
  }
  return out + "\n]}\n";
}

void ProfilePhases::Mark(const char* phase) {
  const Profiler::Clock::time_point now = Profiler::Clock::now();
  if (LogEnabled(LogLevel::kVerbose))
    Log(LogLevel::kVerbose, "session creation: ", phase, " ",
        Micros(std::chrono::duration<double, std::milli>(now - begin_).count()), " ms");
  if (profiler_ != nullptr)
    profiler_->Add({phase, "Session", profiler_->Since(begin_), profiler_->Since(now) - profiler_->Since(begin_),
                    Profiler::ThreadId(), ""});
  begin_ = now;
}

}  // namespace tessera
