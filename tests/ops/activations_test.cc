// Activation functions against formulas written out in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

// Expected values of fn over a float tensor (computed in double).
template <typename Fn>
Tensor MapFloat(const Tensor& x, Fn fn) {
  Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) y.Data<float>()[i] = static_cast<float>(fn(double(x.Data<float>()[i])));
  return y;
}

// Runs `tester` (attributes already set) on x and checks against fn(x).
template <typename Fn>
void Check(OpTester tester, const Tensor& x, Fn fn) {
  tester.Input("X", x).Output("Y", MapFloat(x, fn));
  tester.Run();
}

Tensor Inputs() { return RandomTensor(DataType::kFloat, {3, 7, 11}, 21, -4.0, 4.0); }

TEST(ActivationsTest, ReluOnEveryEpAndLargeInputs) {
  Check(OpTester("Relu", 14), Inputs(), [](double v) { return v > 0 ? v : 0; });
  Check(OpTester("Relu", 14), RandomTensor(DataType::kFloat, {256, 300}, 3), [](double v) { return v > 0 ? v : 0; });
  OpTester ints("Relu", 14);
  ints.Input("X", Make<int32_t>({3}, {-3, 0, 5})).Output("Y", Make<int32_t>({3}, {0, 0, 5}));
  ints.Run();
}

TEST(ActivationsTest, SimpleFloatActivations) {
  const Tensor x = Inputs();
  Check(OpTester("Sigmoid", 13), x, [](double v) { return 1 / (1 + std::exp(-v)); });
  Check(OpTester("Tanh", 13), x, [](double v) { return std::tanh(v); });
  Check(OpTester("Softplus", 7), x, [](double v) { return std::log(1 + std::exp(v)); });
  Check(OpTester("Softsign", 7), x, [](double v) { return v / (1 + std::fabs(v)); });
  Check(OpTester("HardSwish", 14), x, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); });
  Check(OpTester("Mish", 18), x, [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); });
}

TEST(ActivationsTest, SigmoidAndSoftplusStayFiniteForLargeInputs) {
  const Tensor x = Make<float>({4}, {-100.0f, 100.0f, -1000.0f, 1000.0f});
  OpTester sigmoid("Sigmoid", 13);
  sigmoid.Input("X", x).Output("Y", Make<float>({4}, {0.0f, 1.0f, 0.0f, 1.0f}));
  sigmoid.Run();
  OpTester softplus("Softplus", 7);
  softplus.Input("X", x).Output("Y", Make<float>({4}, {0.0f, 100.0f, 0.0f, 1000.0f}));
  softplus.Run();
}

TEST(ActivationsTest, ActivationsWithAttributes) {
  const Tensor x = Inputs();
  Check(OpTester("LeakyRelu", 16), x, [](double v) { return v >= 0 ? v : 0.01 * v; });
  Check(OpTester("LeakyRelu", 16).Attr("alpha", 0.3f), x, [](double v) { return v >= 0 ? v : 0.3 * v; });
  Check(OpTester("HardSigmoid", 7), x, [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); });
  Check(OpTester("HardSigmoid", 7).Attr("alpha", 0.5f).Attr("beta", 0.25f), x,
        [](double v) { return std::clamp(0.5 * v + 0.25, 0.0, 1.0); });
  Check(OpTester("Elu", 7), x, [](double v) { return v >= 0 ? v : std::exp(v) - 1; });
  Check(OpTester("Elu", 7).Attr("alpha", 2.0f), x, [](double v) { return v >= 0 ? v : 2 * (std::exp(v) - 1); });
  const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  Check(OpTester("Selu", 7), x, [&](double v) { return v > 0 ? gamma * v : gamma * (alpha * std::exp(v) - alpha); });
  Check(OpTester("ThresholdedRelu", 10).Attr("alpha", 0.5f), x, [](double v) { return v > 0.5 ? v : 0; });
  Check(OpTester("Celu", 12).Attr("alpha", 2.0f), x,
        [](double v) { return std::max(0.0, v) + std::min(0.0, 2 * (std::exp(v / 2) - 1)); });
}

TEST(ActivationsTest, GeluExactAndTanhApproximation) {
  const Tensor x = Inputs();
  Check(OpTester("Gelu", 20), x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  Check(OpTester("Gelu", 20).Attr("approximate", std::string("tanh")), x, [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
  });
  OpTester invalid("Gelu", 20);
  invalid.Attr("approximate", std::string("fast")).Input("X", x).OutputName("Y").ExpectFailure("approximate");
  invalid.Run({"cpu"});
}

TEST(ActivationsTest, Float16Activations) {
  const Tensor x = Make<Float16>({4}, {ToFloat16(-2.0f), ToFloat16(-0.5f), ToFloat16(0.0f), ToFloat16(3.0f)});
  OpTester relu("Relu", 14);
  relu.Input("X", x).Output("Y", Make<Float16>({4}, {ToFloat16(0.0f), ToFloat16(0.0f), ToFloat16(0.0f), ToFloat16(3.0f)}));
  relu.Run();
  OpTester sigmoid("Sigmoid", 13);
  std::vector<Float16> expected;
  for (float v : {-2.0f, -0.5f, 0.0f, 3.0f}) expected.push_back(ToFloat16(1.0f / (1.0f + std::exp(-v))));
  sigmoid.Input("X", x).Output("Y", Make<Float16>({4}, expected));
  sigmoid.Run();
}

TEST(ActivationsTest, PReluBroadcastsSlope) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 4, 4}, 5);
  const Tensor slope = Make<float>({3, 1, 1}, {0.1f, 0.2f, 0.3f});
  Tensor expected = Tensor::Allocate(DataType::kFloat, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const float v = x.Data<float>()[i];
    expected.Data<float>()[i] = v < 0 ? v * slope.Data<float>()[(i / 16) % 3] : v;
  }
  OpTester t("PRelu", 16);
  t.Input("X", x).Input("slope", slope).Output("Y", expected);
  t.Run();

  OpTester scalar("PRelu", 16);
  scalar.Input("X", Make<float>({3}, {-1, 0, 2})).Input("slope", Make<float>({1}, {0.5f}), true);
  scalar.Output("Y", Make<float>({3}, {-0.5f, 0, 2}));
  scalar.Run();

  OpTester bad("PRelu", 16);
  bad.Input("X", x).Input("slope", Make<float>({2}, {1, 2})).OutputName("Y").ExpectFailure("slope");
  bad.Run({"cpu"});
}

TEST(ActivationsTest, OpsetOneAndSixForms) {
  const Tensor x = Inputs();
  Check(OpTester("Relu", 1).Attr("consumed_inputs", std::vector<int64_t>{0}), x, [](double v) { return v > 0 ? v : 0; });
  Check(OpTester("Sigmoid", 6), x, [](double v) { return 1 / (1 + std::exp(-v)); });
  Check(OpTester("Elu", 1).Attr("alpha", 0.5f), x, [](double v) { return v >= 0 ? v : 0.5 * (std::exp(v) - 1); });
  Check(OpTester("Softsign", 1), x, [](double v) { return v / (1 + std::fabs(v)); });
  // Selu's opset 1 defaults were rounded to four decimals.
  Check(OpTester("Selu", 1), x, [](double v) { return v > 0 ? 1.0507 * v : 1.0507 * 1.6732 * (std::exp(v) - 1); });
  const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  Check(OpTester("Selu", 6), x, [&](double v) { return v > 0 ? gamma * v : gamma * alpha * (std::exp(v) - 1); });
}

// Before opset 7 a slope of x's channel count applies along dimension 1 (PyTorch's PReLU export).
TEST(ActivationsTest, PReluPerChannelSlopeBeforeOpset7) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 4}, 6);
  const Tensor slope = Make<float>({3}, {0.1f, 0.2f, 0.3f});
  Tensor expected = Tensor::Allocate(DataType::kFloat, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const float v = x.Data<float>()[i];
    expected.Data<float>()[i] = v < 0 ? v * slope.Data<float>()[(i / 4) % 3] : v;
  }
  OpTester t("PRelu", 6);
  t.Input("X", x).Input("slope", slope).Output("Y", expected);
  t.Run();
}

TEST(ActivationsTest, ClipFromAttributesBeforeOpset11) {
  OpTester t("Clip", 7);
  t.Attr("min", -1.0f).Attr("max", 2.0f);
  t.Input("X", Make<float>({5}, {-3, -1, 0.5f, 2, 7})).Output("Y", Make<float>({5}, {-1, -1, 0.5f, 2, 2}));
  t.Run();
  OpTester defaults("Clip", 7);
  defaults.Attr("max", 0.0f).Input("X", Make<float>({3}, {-5, 1, 2})).Output("Y", Make<float>({3}, {-5, 0, 0}));
  defaults.Run();
}

TEST(ActivationsTest, ClipFromOptionalInputs) {
  const Tensor x = Make<float>({5}, {-3, -1, 0.5f, 2, 7});
  OpTester both("Clip", 13);
  both.Input("X", x).Input("min", Make<float>({}, {-1}), true).Input("max", Make<float>({}, {2}));
  both.Output("Y", Make<float>({5}, {-1, -1, 0.5f, 2, 2}));
  both.Run();
  OpTester max_only("Clip", 13);
  max_only.Input("X", x).OmittedInput().Input("max", Make<float>({}, {1}));
  max_only.Output("Y", Make<float>({5}, {-3, -1, 0.5f, 1, 1}));
  max_only.Run();
  OpTester none("Clip", 12);
  none.Input("X", x).Output("Y", x);
  none.Run();
  OpTester ints("Clip", 13);
  ints.Input("X", Make<int64_t>({4}, {-9, 0, 5, 9})).Input("min", Make<int64_t>({}, {-2})).Input("max", Make<int64_t>({}, {6}));
  ints.Output("Y", Make<int64_t>({4}, {-2, 0, 5, 6}));
  ints.Run();
  OpTester not_scalar("Clip", 13);
  not_scalar.Input("X", x).Input("min", Make<float>({2}, {0, 1})).OutputName("Y").ExpectFailure("min");
  not_scalar.Run({"cpu"});
}

// ONNX SwiGLU (opset 28): Swish_alpha(A) * B, float and float16 (computed in float), shapes must match.
TEST(ActivationsTest, SwiGLU) {
  const Tensor a = RandomTensor(DataType::kFloat, {3, 2500}, 17, -6, 6);  // more than one block of 2048
  const Tensor b = RandomTensor(DataType::kFloat, {3, 2500}, 18, -2, 2);
  for (float alpha : {1.0f, 1.702f}) {
    Tensor y = Tensor::Allocate(DataType::kFloat, a.shape());
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      const double v = a.Data<float>()[i];
      y.Data<float>()[i] = static_cast<float>(v / (1 + std::exp(-static_cast<double>(alpha) * v)) * b.Data<float>()[i]);
    }
    OpTester t("SwiGLU", 28);
    if (alpha != 1.0f) t.Attr("alpha", alpha);
    t.Input("A", a).Input("B", b).Output("Y", y).Tolerance(1e-5, 1e-5);
    t.Run();
  }
  OpTester half("SwiGLU", 28);
  half.Input("A", RandomTensor(DataType::kFloat16, {4, 9}, 19, -4, 4))
      .Input("B", RandomTensor(DataType::kFloat16, {4, 9}, 20))
      .OutputName("Y");
  half.CompareWithCpu({"cpu"});
  OpTester mismatch("SwiGLU", 28);
  mismatch.Input("A", RandomTensor(DataType::kFloat, {2, 3}, 21)).Input("B", RandomTensor(DataType::kFloat, {3}, 22));
  mismatch.OutputName("Y").ExpectFailure("does not broadcast");
  mismatch.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test

namespace tessera::test {
namespace {

double GeluErf(double v) { return 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2)); }
double GeluTanh(double v) {
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
}

// x + bias along the last dim, then fn.
template <typename Fn>
Tensor BiasThen(const Tensor& x, const Tensor* bias, Fn fn) {
  Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
  const int64_t width = x.shape()[x.shape().rank() - 1];
  for (int64_t i = 0; i < x.NumElements(); ++i)
    y.Data<float>()[i] = static_cast<float>(
        fn(double(x.Data<float>()[i]) + (bias ? double(bias->Data<float>()[i % width]) : 0.0)));
  return y;
}

TEST(ActivationsTest, ContribGeluBiasGeluAndFastGelu) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 16}, 31, -4.0, 4.0);
  const Tensor bias = RandomTensor(DataType::kFloat, {16}, 32);
  OpTester gelu("Gelu", 1, "com.microsoft");
  gelu.Input("X", x).Output("Y", BiasThen(x, nullptr, GeluErf)).Tolerance(1e-6, 1e-5);
  gelu.Run();
  OpTester bias_gelu("BiasGelu", 1, "com.microsoft");
  bias_gelu.Input("A", x).Input("B", bias, true).Output("C", BiasThen(x, &bias, GeluErf)).Tolerance(1e-6, 1e-5);
  bias_gelu.Run();
  OpTester fast("FastGelu", 1, "com.microsoft");
  fast.Input("X", x).Input("bias", bias).Output("Y", BiasThen(x, &bias, GeluTanh)).Tolerance(1e-6, 1e-5);
  fast.Run();
  OpTester fast_no_bias("FastGelu", 1, "com.microsoft");
  fast_no_bias.Input("X", x).Output("Y", BiasThen(x, nullptr, GeluTanh)).Tolerance(1e-6, 1e-5);
  fast_no_bias.Run();
  OpTester wrong_bias("BiasGelu", 1, "com.microsoft");
  wrong_bias.Input("A", x).Input("B", RandomTensor(DataType::kFloat, {15}, 33)).OutputName("C");
  wrong_bias.ExpectFailure("expected float [16]").Run({"cpu"});
}

TEST(ActivationsTest, ContribQuickGelu) {
  const Tensor x = RandomTensor(DataType::kFloat, {4, 9}, 15, -5, 5);
  Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const double v = x.Data<float>()[i];
    y.Data<float>()[i] = static_cast<float>(v / (1 + std::exp(-1.5 * v)));
  }
  OpTester t("QuickGelu", 1, "com.microsoft");
  t.Attr("alpha", 1.5f).Input("X", x).Output("Y", y).Tolerance(1e-6, 1e-5);
  t.Run();
}

// ONNX Swish (opset 24): x * sigmoid(alpha x), alpha 1 by default.
TEST(ActivationsTest, Swish) {
  const Tensor x = RandomTensor(DataType::kFloat, {4, 9}, 16, -6, 6);
  for (float alpha : {1.0f, 0.5f}) {
    Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const double v = x.Data<float>()[i];
      y.Data<float>()[i] = static_cast<float>(v / (1 + std::exp(-static_cast<double>(alpha) * v)));
    }
    OpTester t("Swish", 24);
    if (alpha != 1.0f) t.Attr("alpha", alpha);
    t.Input("X", x).Output("Y", y).Tolerance(1e-6, 1e-5);
    t.Run();
  }
  OpTester before("Swish", 23);  // an opset-23 model has no Swish
  before.Input("X", x).OutputName("Y").ExpectFailure("Swish");
  before.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
