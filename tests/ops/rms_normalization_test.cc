// RMSNormalization (opset 23) and com.microsoft SimplifiedLayerNormalization against the formula
// Y = X / sqrt(mean(X^2) + epsilon) * scale over the axes from `axis`, computed in double.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

// x viewed as [rows, inner]; scale indexed by `scale_index(j)`.
template <typename ScaleIndex>
std::pair<Tensor, Tensor> Reference(const Tensor& x, int64_t inner, const Tensor& scale, ScaleIndex scale_index,
                                    float epsilon) {
  Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
  const int64_t rows = x.NumElements() / inner;
  Tensor inv = Tensor::Allocate(DataType::kFloat, {rows});
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < inner; ++j) sum += std::pow(double(x.Data<float>()[r * inner + j]), 2);
    const double inv_std = 1 / std::sqrt(sum / double(inner) + epsilon);
    inv.Data<float>()[r] = static_cast<float>(inv_std);
    for (int64_t j = 0; j < inner; ++j)
      y.Data<float>()[r * inner + j] =
          static_cast<float>(x.Data<float>()[r * inner + j] * inv_std * scale.Data<float>()[scale_index(j)]);
  }
  return {y, inv};
}

TEST(RmsNormalizationTest, LastAxis) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 8}, 1, -3, 3);
  const Tensor scale = RandomTensor(DataType::kFloat, {8}, 2);
  OpTester t("RMSNormalization", 23);
  t.Input("X", x).Input("scale", scale, true);
  t.Output("Y", Reference(x, 8, scale, [](int64_t j) { return j; }, 1e-5f).first).Tolerance(1e-6, 1e-5);
  t.Run();
}

TEST(RmsNormalizationTest, TwoAxesWithBroadcastScaleAndEpsilon) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 4}, 3);
  const Tensor scale = RandomTensor(DataType::kFloat, {1, 4}, 4);  // broadcasts over the 3 rows of [3, 4]
  OpTester t("RMSNormalization", 23);
  t.Attr("axis", int64_t{1}).Attr("epsilon", 0.5f);
  t.Input("X", x).Input("scale", scale);
  t.Output("Y", Reference(x, 12, scale, [](int64_t j) { return j % 4; }, 0.5f).first).Tolerance(1e-6, 1e-5);
  t.Run();
}

TEST(RmsNormalizationTest, SimplifiedLayerNormalizationReturnsInverseStdDev) {
  const Tensor x = RandomTensor(DataType::kFloat, {3, 5}, 5);
  const Tensor scale = RandomTensor(DataType::kFloat, {5}, 6);
  auto [y, inv] = Reference(x, 5, scale, [](int64_t j) { return j; }, 1e-6f);
  OpTester t("SimplifiedLayerNormalization", 1, "com.microsoft");
  t.Attr("epsilon", 1e-6f);
  t.Input("X", x).Input("scale", scale);
  t.Output("Y", y).Output("inv_std_var", inv.Reshaped({3, 1})).Tolerance(1e-6, 1e-5);
  t.Run({"cpu"});
}

TEST(RmsNormalizationTest, ScaleThatDoesNotBroadcastIsAnError) {
  OpTester t("RMSNormalization", 23);
  t.Input("X", RandomTensor(DataType::kFloat, {2, 4}, 7)).Input("scale", RandomTensor(DataType::kFloat, {3}, 8));
  t.OutputName("Y").ExpectFailure("scale");
  t.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test

namespace tessera::test {
namespace {

TEST(RmsNormalizationTest, SkipSimplifiedLayerNormalizationAddsSkipAndBias) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 8}, 11), skip = RandomTensor(DataType::kFloat, {2, 3, 8}, 12);
  const Tensor gamma = RandomTensor(DataType::kFloat, {8}, 13), bias = RandomTensor(DataType::kFloat, {8}, 14);
  Tensor sum = Tensor::Allocate(DataType::kFloat, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i)
    sum.Data<float>()[i] = x.Data<float>()[i] + skip.Data<float>()[i] + bias.Data<float>()[i % 8];
  auto [y, inv] = Reference(sum, 8, gamma, [](int64_t j) { return j; }, 1e-5f);
  OpTester t("SkipSimplifiedLayerNormalization", 1, "com.microsoft");
  t.Input("input", x).Input("skip", skip).Input("gamma", gamma, true).Input("bias", bias, true);
  t.Output("output", y).OmittedOutput().Output("inv_std_var", inv.Reshaped({2, 3, 1}));
  t.Output("input_skip_bias_sum", sum).Tolerance(1e-6, 1e-5);
  t.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
