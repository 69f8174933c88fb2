// EP SDK: Tessera's leveled log, for execution providers built as plugins (the CUDA and Vulkan EPs log through it).
// Lines go to stderr as "[tessera <level> <ms since the first line>] message", so a plugin's messages interleave with
// the session's in one timeline. The threshold is process-wide: the lowest level any live Environment or session asked
// for (SessionOptions::log_severity_level); a message below it costs one atomic load.
#pragma once

#include <sstream>
#include <string>

#include "tessera/environment.h"

namespace tessera {

// Whether a message at `level` would be written.
bool LogEnabled(LogLevel level);
// Writes one line at `level` (below the threshold nothing is written).
void LogMessage(LogLevel level, const std::string& message);

// Log(LogLevel::kVerbose, "chose ", name, " for ", count, " nodes"): the parts streamed into one line, built only when
// the level is enabled.
template <typename... Parts>
void Log(LogLevel level, const Parts&... parts) {
  if (!LogEnabled(level)) return;
  std::ostringstream os;
  (os << ... << parts);
  LogMessage(level, os.str());
}

}  // namespace tessera
