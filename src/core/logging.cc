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

void LogMessage(LogLevel level, const std::string& message) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "[tessera %s] %s\n", LevelName(level), message.c_str());
}

}  // namespace tessera
