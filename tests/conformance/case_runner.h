// Runs one ONNX backend test case (a folder with model.onnx and test_data_set_*/) in-process.
//
// The session is created on the requested EP; every data set's inputs are fed in the order of the
// model's graph inputs (input_N.pb -> graph.input[N], skipping inputs the session treats as
// initializers) and outputs compared with output_N.pb. Errors with code kNotImplemented make the case
// "unsupported"; any other error or mismatch makes it "fail". A case that runs longer than
// `time_limit_s` is reported as a timeout after its current data set (a running kernel cannot be
// interrupted).
#pragma once

#include <filesystem>
#include <string>

#include "expectations.h"
#include "tessera/tessera.h"
#include "value_compare.h"

namespace tessera::conformance {

struct CaseResult {
  CaseStatus status = CaseStatus::kPass;
  std::string reason;  // empty on pass
  double seconds = 0;
  bool not_applicable = false;  // lowered precision: the case has no float32 input or output

};

struct CaseSettings {
  SessionOptions session_options;
  Tolerance tolerance;
  double time_limit_s = 30;
  // kFloat16 / kBFloat16: run the case's model and data lowered to that type (precision_lowering.h) and
  // compare with `tolerance` widened to LoweredTolerance; kUndefined: as written.
  DataType lower_to = DataType::kUndefined;
};

CaseResult RunCase(Environment& env, const std::filesystem::path& case_dir, const CaseSettings& settings);

}  // namespace tessera::conformance
