#include "case_runner.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "precision_lowering.h"
#include "tensor_proto_io.h"

namespace tessera::conformance {
namespace {

using Clock = std::chrono::steady_clock;

// Files named <prefix><N>.pb in `dir`, ordered by N.
std::vector<std::filesystem::path> NumberedFiles(const std::filesystem::path& dir, const std::string& prefix) {
  std::vector<std::filesystem::path> files;
  for (size_t i = 0;; ++i) {
    std::filesystem::path file = dir / (prefix + std::to_string(i) + ".pb");
    if (!std::filesystem::exists(file)) break;
    files.push_back(std::move(file));
  }
  return files;
}

std::vector<std::filesystem::path> DataSets(const std::filesystem::path& case_dir) {
  std::vector<std::filesystem::path> sets;
  for (const auto& entry : std::filesystem::directory_iterator(case_dir))
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_")) sets.push_back(entry);
  std::sort(sets.begin(), sets.end());
  return sets;
}

CaseResult Failed(CaseStatus status, const std::string& what) { return {status, OneLineReason(what), 0}; }

// Unsupported cases keep the error as it is (it names the op); failures say where they happened.
CaseResult FromError(const Error& e, const std::string& stage) {
  if (e.code() == ErrorCode::kNotImplemented) return Failed(CaseStatus::kUnsupported, e.what());
  return Failed(CaseStatus::kFail, stage + ": " + e.what());
}

// Runs one data set; returns an empty string on success, else the first mismatch.
// `graph` is the model as written (the data files hold its types); with `lower_to` set, the session runs the
// lowered model: inputs are rounded to that type and outputs widened back before the comparison.
std::string RunDataSet(Session& session, const onnx::GraphProto& graph, const std::filesystem::path& dir,
                       const Tolerance& tolerance, DataType lower_to) {
  const bool lowered = lower_to != DataType::kUndefined;
  std::set<std::string> session_inputs;
  for (const ValueInfo& info : session.inputs()) session_inputs.insert(info.name);

  Session::NamedValues feeds;
  const auto input_files = NumberedFiles(dir, "input_");
  if (static_cast<int>(input_files.size()) > graph.input_size())
    return std::to_string(input_files.size()) + " input files for " + std::to_string(graph.input_size()) + " inputs";
  for (size_t i = 0; i < input_files.size(); ++i) {
    const onnx::ValueInfoProto& input = graph.input(static_cast<int>(i));
    Value value = ReadTestValue(input_files[i], input.type());
    if (lowered) value = LowerValue(value, lower_to);
    if (session_inputs.count(input.name())) feeds.emplace_back(input.name(), std::move(value));
  }

  const auto output_files = NumberedFiles(dir, "output_");
  if (static_cast<int>(output_files.size()) > graph.output_size())
    return std::to_string(output_files.size()) + " output files for " + std::to_string(graph.output_size()) +
           " outputs";
  std::vector<std::string> output_names;
  for (size_t i = 0; i < output_files.size(); ++i) output_names.push_back(graph.output(static_cast<int>(i)).name());

  const std::vector<Value> actual = session.Run(feeds, output_names);
  if (actual.size() != output_names.size())
    return "got " + std::to_string(actual.size()) + " outputs, expected " + std::to_string(output_names.size());
  for (size_t i = 0; i < output_files.size(); ++i) {
    const Value expected = ReadTestValue(output_files[i], graph.output(static_cast<int>(i)).type());
    std::string diff = lowered ? CompareValues(output_names[i], WidenValue(expected), WidenValue(actual[i]), tolerance)
                               : CompareValues(output_names[i], expected, actual[i], tolerance);
    if (!diff.empty()) return diff;
  }
  return "";
}

CaseResult RunCaseUntimed(Environment& env, const std::filesystem::path& case_dir, const CaseSettings& settings,
                          Clock::time_point start) {
  onnx::ModelProto model;
  try {
    ReadProtoFile(case_dir / "model.onnx", model);
  } catch (const Error& e) {
    return Failed(CaseStatus::kFail, std::string("model: ") + e.what());
  }
  const bool lowered = settings.lower_to != DataType::kUndefined;
  std::string lowered_bytes;
  if (lowered) {
    onnx::ModelProto lowered_model = model;
    if (!LowerModelPrecision(lowered_model, settings.lower_to)) {
      CaseResult skipped;
      skipped.not_applicable = true;
      return skipped;
    }
    lowered_bytes = lowered_model.SerializeAsString();
  }
  const Tolerance tolerance = lowered ? LoweredTolerance(settings.lower_to) : settings.tolerance;
  std::unique_ptr<Session> session;
  try {
    session = lowered ? std::make_unique<Session>(env, lowered_bytes.data(), lowered_bytes.size(),
                                                  settings.session_options)
                      : std::make_unique<Session>(env, case_dir / "model.onnx", settings.session_options);
  } catch (const Error& e) {
    return FromError(e, "session");
  }
  for (const auto& data_set : DataSets(case_dir)) {
    const std::string label = data_set.filename().string();
    try {
      const std::string diff = RunDataSet(*session, model.graph(), data_set, tolerance, settings.lower_to);
      if (!diff.empty()) return Failed(CaseStatus::kFail, label + ": " + diff);
    } catch (const Error& e) {
      return FromError(e, label);
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed > settings.time_limit_s)
      return Failed(CaseStatus::kFail, "timeout: " + std::to_string(static_cast<int>(elapsed)) + " s (limit " +
                                           std::to_string(static_cast<int>(settings.time_limit_s)) + " s)");
  }
  return {};
}

}  // namespace

CaseResult RunCase(Environment& env, const std::filesystem::path& case_dir, const CaseSettings& settings) {
  const Clock::time_point start = Clock::now();
  CaseResult result;
  try {
    result = RunCaseUntimed(env, case_dir, settings, start);
  } catch (const std::exception& e) {
    result = Failed(CaseStatus::kFail, std::string("exception: ") + e.what());
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tessera::conformance
