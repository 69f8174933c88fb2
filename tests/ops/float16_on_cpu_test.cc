// Float16 and bfloat16 on the CPU EP for ops whose kernels compute in float32 (the float-compute adapter,
// src/providers/cpu/common/float_compute_adapter.h): each op runs on 16-bit inputs and is compared with the
// float32 kernel run on the same (rounded) values. The lowered conformance runs (ctest conformance_cpu_float16,
// conformance_cpu_bfloat16) cover every other op.
#include <gtest/gtest.h>

#include <functional>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor Convert(const Tensor& t, DataType to) {
  Tensor out = Tensor::Allocate(to, t.shape());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    float v = 0;
    switch (t.type()) {
      case DataType::kFloat: v = t.Data<float>()[i]; break;
      case DataType::kFloat16: v = ToFloat(t.Data<Float16>()[i]); break;
      case DataType::kBFloat16: v = ToFloat(t.Data<BFloat16>()[i]); break;
      default: ADD_FAILURE() << "unexpected type"; return out;
    }
    switch (to) {
      case DataType::kFloat: out.Data<float>()[i] = v; break;
      case DataType::kFloat16: out.Data<Float16>()[i] = ToFloat16(v); break;
      case DataType::kBFloat16: out.Data<BFloat16>()[i] = ToBFloat16(v); break;
      default: ADD_FAILURE() << "unexpected type"; return out;
    }
  }
  return out;
}

struct Operand {
  std::string name;
  Tensor value;  // float32; rounded to the 16-bit type for both runs
  bool constant = false;
};

// Runs `configure(tester)` + operands in `half` and in float32 (on the rounded values) and compares.
void CheckAgainstFloat(const std::string& op, int opset, const std::vector<Operand>& operands,
                       const std::function<void(OpTester&)>& configure, DataType half, double relative) {
  SCOPED_TRACE(op + (half == DataType::kFloat16 ? " float16" : " bfloat16"));
  OpTester reference(op, opset), lowered(op, opset);
  configure(reference);
  configure(lowered);
  for (const Operand& o : operands) {
    const Tensor rounded = Convert(o.value, half);
    reference.Input(o.name, Convert(rounded, DataType::kFloat), o.constant);
    lowered.Input(o.name, rounded, o.constant);
  }
  reference.OutputName("Y");
  lowered.OutputName("Y");
  const std::vector<Tensor> expected = reference.RunOn("cpu");
  const std::vector<Tensor> actual = lowered.RunOn("cpu");
  ASSERT_EQ(actual.size(), 1u);
  ASSERT_EQ(actual[0].type(), half);
  EXPECT_EQ(CompareTensors(expected[0], Convert(actual[0], DataType::kFloat), relative, relative), "");
}

TEST(Float16OnCpuTest, ConvWithConstantWeightsAndBias) {
  const std::vector<Operand> operands = {{"X", RandomTensor(DataType::kFloat, {1, 8, 12, 12}, 1)},
                                         {"W", RandomTensor(DataType::kFloat, {16, 8, 3, 3}, 2), true},
                                         {"B", RandomTensor(DataType::kFloat, {16}, 3), true}};
  auto configure = [](OpTester& t) { t.Attr("pads", std::vector<int64_t>{1, 1, 1, 1}); };
  CheckAgainstFloat("Conv", 11, operands, configure, DataType::kFloat16, 5e-3);
  CheckAgainstFloat("Conv", 11, operands, configure, DataType::kBFloat16, 3e-2);
}

TEST(Float16OnCpuTest, NormalizationPoolingAndSoftmax) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 4, 6, 6}, 4, -2, 2);
  for (DataType half : {DataType::kFloat16, DataType::kBFloat16}) {
    const double tolerance = half == DataType::kFloat16 ? 5e-3 : 3e-2;
    CheckAgainstFloat("InstanceNormalization", 6,
                      {{"X", x}, {"S", RandomTensor(DataType::kFloat, {4}, 5), true},
                       {"B", RandomTensor(DataType::kFloat, {4}, 6), true}},
                      [](OpTester&) {}, half, tolerance);
    CheckAgainstFloat("LRN", 13, {{"X", x}}, [](OpTester& t) { t.Attr("size", int64_t{3}); }, half, tolerance);
    CheckAgainstFloat("Softmax", 13, {{"X", x}}, [](OpTester&) {}, half, tolerance);
    CheckAgainstFloat("LpNormalization", 1, {{"X", x}}, [](OpTester&) {}, half, tolerance);
    CheckAgainstFloat("ReduceMean", 13, {{"X", x}}, [](OpTester& t) { t.Attr("axes", std::vector<int64_t>{2, 3}); },
                      half, tolerance);
  }
}

TEST(Float16OnCpuTest, ConvTransposeAndGridSample) {
  for (DataType half : {DataType::kFloat16, DataType::kBFloat16}) {
    const double tolerance = half == DataType::kFloat16 ? 5e-3 : 3e-2;
    CheckAgainstFloat("ConvTranspose", 11,
                      {{"X", RandomTensor(DataType::kFloat, {1, 4, 5, 5}, 7)},
                       {"W", RandomTensor(DataType::kFloat, {4, 2, 3, 3}, 8), true}},
                      [](OpTester& t) { t.Attr("strides", std::vector<int64_t>{2, 2}); }, half, tolerance);
    CheckAgainstFloat("GridSample", 16,
                      {{"X", RandomTensor(DataType::kFloat, {1, 2, 4, 4}, 9)},
                       {"Grid", RandomTensor(DataType::kFloat, {1, 3, 3, 2}, 10, -0.9, 0.9)}},
                      [](OpTester&) {}, half, tolerance);
  }
}

}  // namespace
}  // namespace tessera::test
