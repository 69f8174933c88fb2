// Minimal leveled logging to stderr. The threshold is process-wide (the lowest level any live
// Environment or session asked for); messages below it cost one atomic load.
#pragma once

#include <sstream>
#include <string>

#include "tessera/environment.h"

namespace tessera {

void SetLogThreshold(LogLevel level);
LogLevel LogThreshold();
bool LogEnabled(LogLevel level);
void LogMessage(LogLevel level, const std::string& message);

template <typename... Parts>
void Log(LogLevel level, const Parts&... parts) {
  if (!LogEnabled(level)) return;
  std::ostringstream os;
  (os << ... << parts);
  LogMessage(level, os.str());
}

}  // namespace tessera
