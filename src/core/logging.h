// The log's process-wide threshold (set by Environments and sessions), beside the EP SDK's log API
// (tessera/ep/logging.h) that core code and plugins write through.
#pragma once

#include "tessera/ep/logging.h"

namespace tessera {

void SetLogThreshold(LogLevel level);
LogLevel LogThreshold();

}  // namespace tessera
