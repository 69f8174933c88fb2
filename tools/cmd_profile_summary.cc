// `tessera profile-summary FILE.json`: where the time of a profile (run/bench --profile, or
// SessionOptions::enable_profiling) goes, per op type.
#include <iostream>
#include <optional>
#include <string>

#include "cli_args.h"
#include "commands.h"
#include "session/profile_reader.h"
#include "table.h"

namespace tessera::cli {
namespace {

constexpr const char* kProfileSummaryUsage =
    "usage: tessera profile-summary FILE.json [--top N] [--run N]\n"
    "Prints the session phases, the runs (mean and median), the median host time of a step per execution\n"
    "provider, then per op type the number of node executions, their total host and device time and their\n"
    "median host time, slowest first (the N slowest op types with --top). Totals include first runs (plan\n"
    "building, algorithm searches); medians show the steady state. --run N summarizes the N-th run alone (1: the\n"
    "first run, where plans, searches and lazy loading cost) and how much of it no step accounts for.\n";

void PrintRunsAndPhases(const Profile& profile) {
  int runs = 0;
  double run_ms = 0;
  std::vector<double> run_us;
  for (const ProfileEvent& e : profile.events) {
    if (e.phase != "X" || e.category != "Session") continue;
    if (e.name == "model_run") {
      ++runs;
      run_ms += e.dur_us / 1000;
      run_us.push_back(e.dur_us);
    } else {
      std::cout << "  " << e.name << ": " << FormatFixed(e.dur_us / 1000, 3) << " ms\n";
    }
  }
  std::cout << "runs: " << runs;
  if (runs > 0)
    std::cout << ", " << FormatFixed(run_ms, 3) << " ms total, " << FormatFixed(run_ms / runs, 3) << " ms mean, "
              << FormatFixed(Median(run_us) / 1000, 3) << " ms median";
  std::cout << "\n";
  for (const ProviderStepTimes& p : MedianStepTimesByProvider(profile))
    std::cout << "steps on " << (p.provider.empty() ? "(none)" : p.provider) << ": " << p.count
              << ", median host time " << FormatFixed(p.median_host_us, 1) << " us\n";
}

// For one run: its duration against the host time of its steps on the run's own thread (what the executor,
// allocations and synchronization cost around them).
void PrintTimeOutsideSteps(const Profile& profile) {
  for (const ProfileEvent& r : profile.events) {
    if (r.phase != "X" || r.category != "Session" || r.name != "model_run") continue;
    double steps_us = 0;
    for (const ProfileEvent& e : profile.events)
      if (e.phase == "X" && e.category == "Node" && e.tid == r.tid && e.ts_us >= r.ts_us &&
          e.ts_us + e.dur_us <= r.ts_us + r.dur_us)
        steps_us += e.dur_us;
    std::cout << "run: " << FormatFixed(r.dur_us / 1000, 3) << " ms, of which steps " << FormatFixed(steps_us / 1000, 3)
              << " ms, outside steps " << FormatFixed((r.dur_us - steps_us) / 1000, 3) << " ms\n";
  }
}

}  // namespace

int ProfileSummaryCommand(std::span<const std::string> args) {
  const ParsedArgs parsed = ParseArgs(args, {"--top", "--run"}, {});
  if (parsed.Has("--help")) {
    std::cout << kProfileSummaryUsage;
    return 0;
  }
  if (parsed.positional.size() != 1) throw UsageError("profile-summary takes exactly one FILE.json");
  const std::optional<std::string> run = parsed.Last("--run");
  const Profile profile =
      run ? SelectRun(ReadProfile(parsed.positional[0]), parsed.IntOr("--run", 1, 1)) : ReadProfile(parsed.positional[0]);
  const std::vector<OpTypeTotals> totals = SummarizeByOpType(profile);
  const size_t top = static_cast<size_t>(parsed.IntOr("--top", static_cast<int>(totals.size()), 1));

  double host_ms = 0, device_ms = 0;
  for (const OpTypeTotals& t : totals) {
    host_ms += t.host_ms;
    device_ms += t.device_ms;
  }
  auto share = [](double part, double whole) { return whole > 0 ? FormatFixed(100 * part / whole, 1) : std::string("-"); };
  Table table({"op type", "count", "host ms", "host %", "device ms", "device %", "median host us"});
  table.RightAlign({1, 2, 3, 4, 5, 6});
  for (size_t i = 0; i < totals.size() && i < top; ++i) {
    const OpTypeTotals& t = totals[i];
    table.AddRow({t.op_type, std::to_string(t.count), FormatFixed(t.host_ms, 3), share(t.host_ms, host_ms),
                  t.device_ms > 0 ? FormatFixed(t.device_ms, 3) : "-", t.device_ms > 0 ? share(t.device_ms, device_ms) : "-",
                  FormatFixed(t.median_host_us, 1)});
  }
  table.AddRow({"total", "", FormatFixed(host_ms, 3), "", device_ms > 0 ? FormatFixed(device_ms, 3) : "-", "", ""});
  std::cout << "Profile: " << parsed.positional[0] << (run ? " (run " + *run + " only)" : "") << "\n";
  PrintRunsAndPhases(profile);
  if (run) PrintTimeOutsideSteps(profile);
  std::cout << "\n";
  table.Print(std::cout);
  return 0;
}

}  // namespace tessera::cli
