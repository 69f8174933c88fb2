#include "session/profile_reader.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "tessera/status.h"

namespace tessera {

namespace {

ProfileEvent EventFrom(const JsonValue& e) {
  ProfileEvent event;
  event.phase = e.StringOr("ph");
  event.category = e.StringOr("cat");
  event.name = e.StringOr("name");
  event.ts_us = e.NumberOr("ts");
  event.dur_us = e.NumberOr("dur");
  event.pid = static_cast<int64_t>(e.NumberOr("pid"));
  event.tid = static_cast<int64_t>(e.NumberOr("tid"));
  if (const JsonValue* args = e.Find("args"); args != nullptr && args->is_object()) event.args = *args;
  return event;
}

}  // namespace

Profile ParseProfile(std::string_view json) {
  const JsonValue root = ParseJson(json);
  const JsonValue* events = root.Find("traceEvents");
  if (events == nullptr || !events->is_array())
    Fail(ErrorCode::kInvalidArgument, "not a trace: no \"traceEvents\" array at the top level");
  Profile profile;
  for (const JsonValue& e : events->items) {
    if (!e.is_object()) Fail(ErrorCode::kInvalidArgument, "not a trace: an element of traceEvents is not an object");
    ProfileEvent event = EventFrom(e);
    if (event.phase == "M" && event.name == "thread_name") profile.thread_names[event.tid] = event.args.StringOr("name");
    profile.events.push_back(std::move(event));
  }
  return profile;
}

Profile ReadProfile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) Fail(ErrorCode::kIo, "cannot open profile '", path.string(), "'");
  std::ostringstream text;
  text << file.rdbuf();
  try {
    return ParseProfile(text.str());
  } catch (const Error& e) {
    Fail(e.code(), path.string(), ": ", e.what());
  }
}

double Median(std::vector<double>& values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double upper = values[mid];
  return (*std::max_element(values.begin(), values.begin() + mid) + upper) / 2;
}

Profile SelectRun(const Profile& profile, int run) {
  std::vector<const ProfileEvent*> runs;
  for (const ProfileEvent& e : profile.events)
    if (e.phase == "X" && e.category == "Session" && e.name == "model_run") runs.push_back(&e);
  std::sort(runs.begin(), runs.end(), [](const ProfileEvent* a, const ProfileEvent* b) { return a->ts_us < b->ts_us; });
  if (run < 1 || static_cast<size_t>(run) > runs.size())
    Fail(ErrorCode::kInvalidArgument, "the profile holds ", runs.size(), " runs; run ", run, " was asked for");
  const double begin = runs[run - 1]->ts_us;
  const double end = static_cast<size_t>(run) < runs.size() ? runs[run]->ts_us
                                                             : std::numeric_limits<double>::infinity();
  Profile selected;
  selected.thread_names = profile.thread_names;
  for (const ProfileEvent& e : profile.events) {
    const bool phase = e.category == "Session" && e.name != "model_run";
    if (e.phase != "X" || phase || (e.ts_us >= begin && e.ts_us < end)) selected.events.push_back(e);
  }
  return selected;
}

std::vector<OpTypeTotals> SummarizeByOpType(const Profile& profile) {
  std::map<std::string, OpTypeTotals> by_op;
  std::map<std::string, std::vector<double>> host_us;
  for (const ProfileEvent& e : profile.events) {
    if (e.phase != "X" || (e.category != "Node" && e.category != "Kernel")) continue;
    OpTypeTotals& totals = by_op[e.op_type()];
    totals.op_type = e.op_type();
    if (e.category == "Node") {
      ++totals.count;
      totals.host_ms += e.dur_us / 1000;
      host_us[e.op_type()].push_back(e.dur_us);
    } else {
      totals.device_ms += e.dur_us / 1000;
    }
  }
  std::vector<OpTypeTotals> sorted;
  for (auto& [op, totals] : by_op) {
    totals.median_host_us = Median(host_us[op]);
    sorted.push_back(totals);
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const OpTypeTotals& a, const OpTypeTotals& b) {
    return std::max(a.host_ms, a.device_ms) > std::max(b.host_ms, b.device_ms);
  });
  return sorted;
}

std::vector<ProviderStepTimes> MedianStepTimesByProvider(const Profile& profile) {
  std::map<std::string, std::vector<double>> host_us;
  for (const ProfileEvent& e : profile.events)
    if (e.phase == "X" && e.category == "Node") host_us[e.provider()].push_back(e.dur_us);
  std::vector<ProviderStepTimes> out;
  for (auto& [provider, durations] : host_us)
    out.push_back({provider, static_cast<int64_t>(durations.size()), Median(durations)});
  return out;
}

}  // namespace tessera
