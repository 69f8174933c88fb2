// Device time on the simulated device (kEpProfiling): markers queued on a TestingStream read the clock
// on the stream's worker thread when they run, so the intervals are when the queued work really ran.
#pragma once

#include <memory>

#include "providers/testing/testing_stream.h"
#include "tessera/ep/execution_provider.h"

namespace tessera::testing_ep {

// A timer for one run on `stream` (see DeviceTimer). While the stream is recording a graph, markers are
// not queued (they would be replayed long after the timer is gone) and those steps are not measured.
std::unique_ptr<DeviceTimer> CreateTestingTimer(TestingStream& stream);

}  // namespace tessera::testing_ep
