// The op-test harness: one-node ONNX models built in C++, run on any EP, compared with expected
// values or with the CPU EP's result.
//
//   OpTester t("Add", 14);
//   t.Input("A", RandomTensor(DataType::kFloat, {2, 3}, 1));
//   t.Input("B", RandomTensor(DataType::kFloat, {3}, 2));
//   t.Output("C", expected);         // checks against expected values on every EP in RunEps()
//   t.Run();                         // default EPs: cpu and testing
//
// Or, without expected values: t.OutputName("C"); t.CompareWithCpu({"testing"});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace tessera::test {

// Uniform random values in [lo, hi) (integers: rounded); bools: 50/50. Deterministic for a seed.
Tensor RandomTensor(DataType type, const Shape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0);

class OpTester {
 public:
  explicit OpTester(std::string op_type, int opset = 17, std::string domain = "");

  OpTester& Attr(const std::string& name, int64_t value);
  OpTester& Attr(const std::string& name, float value);
  OpTester& Attr(const std::string& name, const std::string& value);
  OpTester& Attr(const std::string& name, const std::vector<int64_t>& values);
  OpTester& Attr(const std::string& name, const std::vector<float>& values);
  OpTester& Attr(const std::string& name, const std::vector<std::string>& values);
  OpTester& Attr(const std::string& name, const Tensor& value);

  // A graph input (or a constant initializer when `constant` is true).
  OpTester& Input(const std::string& name, const Tensor& value, bool constant = false);
  OpTester& OmittedInput();  // an empty input name (optional input left out)
  OpTester& Output(const std::string& name, const Tensor& expected);
  OpTester& OutputName(const std::string& name);  // output without expected values
  OpTester& OmittedOutput();                      // an empty output name (optional output left out)
  OpTester& Tolerance(double absolute, double relative);
  // Expect session creation or the run to fail with an error containing `message_part`.
  OpTester& ExpectFailure(const std::string& message_part);

  // Runs on each EP (short names: "cpu", "testing") and checks against the expected outputs.
  void Run(const std::vector<std::string>& eps = {"cpu", "testing"});
  // Runs on "cpu" and on each EP in `eps` and checks they agree within tolerance.
  void CompareWithCpu(const std::vector<std::string>& eps = {"testing"});
  // Runs on one EP and returns the outputs (host tensors).
  std::vector<Tensor> RunOn(const std::string& ep);
  // The serialized one-node model.
  std::string SerializedModel() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Checks `actual` against `expected`: same type and shape, |a - e| <= abs + rel * |e| for floats
// (NaN matches NaN), equality otherwise. Returns an empty string on success, else a description.
std::string CompareTensors(const Tensor& expected, const Tensor& actual, double absolute, double relative);

}  // namespace tessera::test
