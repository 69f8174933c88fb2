// Reading a profile back (docs/PROFILING.md): its events, and totals per op type for
// `tessera profile-summary` and tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "session/json_reader.h"

namespace tessera {

struct ProfileEvent {
  std::string phase;  // "X" (complete) or "M" (metadata)
  std::string category, name;
  double ts_us = 0, dur_us = 0;
  int64_t pid = 0, tid = 0;
  JsonValue args;  // an object
  std::string op_type() const { return args.StringOr("op_type"); }
  std::string provider() const { return args.StringOr("provider"); }
};

struct Profile {
  std::vector<ProfileEvent> events;             // in file order
  std::map<int64_t, std::string> thread_names;  // from "thread_name" metadata events
};

// Throws kInvalidArgument when the text is not a trace ({"traceEvents":[...]}), kIo when unreadable.
Profile ParseProfile(std::string_view json);
Profile ReadProfile(const std::filesystem::path& path);

struct OpTypeTotals {
  std::string op_type;
  int64_t count = 0;     // host "Node" events
  double host_ms = 0;    // sum of their durations
  double device_ms = 0;  // sum of the device ("Kernel") events of that op type
  double median_host_us = 0;  // median duration of its host events: the steady state, unlike a first run's search
};

// The events of the `run`-th model run (1-based, in time order): that run's "model_run" event, the events that
// started on the host between its start and the start of the next run (its steps, and the device kernels
// queued in between), and the session phases (load, optimize, ...). Throws kInvalidArgument when the profile
// holds fewer runs.
Profile SelectRun(const Profile& profile, int run);

// Totals per op type, slowest first (by the larger of host and device time).
std::vector<OpTypeTotals> SummarizeByOpType(const Profile& profile);

// The median host time of the steps ("Node" events) of each execution provider, and their count.
struct ProviderStepTimes {
  std::string provider;
  int64_t count = 0;
  double median_host_us = 0;
};
std::vector<ProviderStepTimes> MedianStepTimesByProvider(const Profile& profile);

// The median of `values` (0 when empty); reorders them.
double Median(std::vector<double>& values);

}  // namespace tessera
