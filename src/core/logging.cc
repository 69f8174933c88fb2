#include "core/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

namespace tessera {

namespace {
std::atomic<int> g_threshold{static_cast<int>(LogLevel::kWarning)};
const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kVerbose: return "V";
    case LogLevel::kInfo: return "I";
    case LogLevel::kWarning: return "W";
    case LogLevel::kError: return "E";
    case LogLevel::kFatal: return "F";
  }
  return "?";
}
}  // namespace

void SetLogThreshold(LogLevel level) { g_threshold.store(static_cast<int>(level)); }
LogLevel LogThreshold() { return static_cast<LogLevel>(g_threshold.load()); }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_threshold.load(std::memory_order_relaxed); }

// Each line carries the milliseconds since the process's first log line, so that a verbose log of session
// creation or of a run is also its timeline: "[tessera V 123.456] message".
void LogMessage(LogLevel level, const std::string& message) {
  static std::mutex mutex;
  static const std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - origin).count();
  std::fprintf(stderr, "[tessera %s %.3f] %s\n", LevelName(level), ms, message.c_str());
}

}  // namespace tessera
