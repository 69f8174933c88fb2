// BatchNormalization, LayerNormalization and InstanceNormalization against naive references.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

TEST(NormalizationOpTest, BatchNormInference) {
  for (int opset : {7, 9, 14, 15}) {
    const Shape xs{2, 3, 4, 5};
    Tensor x = RandomTensor(DataType::kFloat, xs, 1), scale = RandomTensor(DataType::kFloat, {3}, 2);
    Tensor bias = RandomTensor(DataType::kFloat, {3}, 3), mean = RandomTensor(DataType::kFloat, {3}, 4);
    Tensor var = RandomTensor(DataType::kFloat, {3}, 5, 0.1, 2.0);
    Tensor y = Tensor::Allocate(DataType::kFloat, xs);
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const int64_t c = (i / 20) % 3;
      const double norm = (x.Data<float>()[i] - double(mean.Data<float>()[c])) / std::sqrt(double(var.Data<float>()[c]) + 1e-3);
      y.Data<float>()[i] = float(norm * scale.Data<float>()[c] + bias.Data<float>()[c]);
    }
    OpTester t("BatchNormalization", opset);
    t.Attr("epsilon", 1e-3f);
    t.Input("X", x).Input("scale", scale).Input("B", bias).Input("mean", mean).Input("var", var).Output("Y", y);
    t.Run();
  }
}

// X [2, 2, 2]: channel 0 holds {1, 3, 3, 5} (mean 3, var 2), channel 1 {0, 2, 2, 4} (mean 2, var 2); with
// epsilon 2 both normalize by sqrt(2 + 2) = 2.
OpTester& BatchNormTrainingCase(OpTester& t) {
  t.Attr("epsilon", 2.0f).Attr("momentum", 0.5f);
  t.Input("X", Tensor::FromVector<float>(Shape{2, 2, 2}, {1, 3, 0, 2, 3, 5, 2, 4}));
  t.Input("scale", Tensor::FromVector<float>(Shape{2}, {1, 2})).Input("B", Tensor::FromVector<float>(Shape{2}, {0, 1}));
  t.Input("mean", Tensor::FromVector<float>(Shape{2}, {1, 0}));
  t.Input("var", Tensor::FromVector<float>(Shape{2}, {1, 2}));
  t.Output("Y", Tensor::FromVector<float>(Shape{2, 2, 2}, {-1, 0, -1, 1, 0, 1, 1, 3}));
  // running = input * momentum + batch * (1 - momentum)
  t.Output("running_mean", Tensor::FromVector<float>(Shape{2}, {2, 1}));
  t.Output("running_var", Tensor::FromVector<float>(Shape{2}, {1.5f, 2}));
  return t;
}

TEST(NormalizationOpTest, BatchNormTrainingMode) {
  for (int opset : {14, 15}) {
    OpTester t("BatchNormalization", opset);
    t.Attr("training_mode", int64_t{1});
    BatchNormTrainingCase(t).Run();
  }
}

TEST(NormalizationOpTest, BatchNormLegacyTrainingOutputs) {
  OpTester t("BatchNormalization", 9);
  BatchNormTrainingCase(t);
  t.Output("saved_mean", Tensor::FromVector<float>(Shape{2}, {3, 2}));
  t.Output("saved_var", Tensor::FromVector<float>(Shape{2}, {2, 2}));
  t.Run();
}

TEST(NormalizationOpTest, BatchNormTrainingModeMatchesReference) {
  const Shape xs{3, 4, 5, 6};
  Tensor x = RandomTensor(DataType::kFloat, xs, 11, -3, 3), scale = RandomTensor(DataType::kFloat, {4}, 12);
  Tensor bias = RandomTensor(DataType::kFloat, {4}, 13), mean = RandomTensor(DataType::kFloat, {4}, 14);
  Tensor var = RandomTensor(DataType::kFloat, {4}, 15, 0.1, 2.0);
  Tensor y = Tensor::Allocate(DataType::kFloat, xs), running_mean = Tensor::Allocate(DataType::kFloat, {4}),
         running_var = Tensor::Allocate(DataType::kFloat, {4});
  for (int64_t c = 0; c < 4; ++c) {
    double sum = 0, sum_sq = 0;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 30; ++i) sum += x.Data<float>()[(n * 4 + c) * 30 + i];
    const double m = sum / 90;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 30; ++i) sum_sq += std::pow(x.Data<float>()[(n * 4 + c) * 30 + i] - m, 2);
    const double v = sum_sq / 90;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 30; ++i) {
        const int64_t k = (n * 4 + c) * 30 + i;
        const double normalized = (x.Data<float>()[k] - m) / std::sqrt(v + 1e-5);
        y.Data<float>()[k] = float(normalized * scale.Data<float>()[c] + bias.Data<float>()[c]);
      }
    running_mean.Data<float>()[c] = float(mean.Data<float>()[c] * 0.9 + m * 0.1);
    running_var.Data<float>()[c] = float(var.Data<float>()[c] * 0.9 + v * 0.1);
  }
  OpTester t("BatchNormalization", 15);
  t.Attr("training_mode", int64_t{1});
  t.Input("X", x).Input("scale", scale).Input("B", bias).Input("mean", mean).Input("var", var);
  t.Output("Y", y).Output("running_mean", running_mean).Output("running_var", running_var);
  t.Run();
}

TEST(NormalizationOpTest, BatchNormStatisticsOutputsNeedTrainingMode) {
  OpTester t("BatchNormalization", 15);
  t.Input("X", RandomTensor(DataType::kFloat, {1, 2, 2}, 1));
  for (const char* name : {"scale", "B", "mean", "var"}) t.Input(name, RandomTensor(DataType::kFloat, {2}, 2, 0.1, 1));
  t.OutputName("Y").OutputName("running_mean").OutputName("running_var").ExpectFailure("training_mode=1");
  t.Run({"cpu"});
}

// Reference layer norm over dims [axis, rank) with scale/bias of the normalized shape.
void CheckLayerNorm(const Shape& xs, int64_t axis, bool with_bias, bool stats) {
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(xs.rank()) : axis);
  const Shape norm_shape(std::vector<int64_t>(xs.dims().begin() + a, xs.dims().end()));
  const int64_t width = norm_shape.NumElements(), rows = xs.NumElements() / width;
  Tensor x = RandomTensor(DataType::kFloat, xs, 1), scale = RandomTensor(DataType::kFloat, norm_shape, 2);
  Tensor bias = RandomTensor(DataType::kFloat, norm_shape, 3);
  Tensor y = Tensor::Allocate(DataType::kFloat, xs);
  std::vector<int64_t> stat_dims(xs.dims().begin(), xs.dims().begin() + a);
  stat_dims.resize(xs.rank(), 1);
  Tensor mean_t = Tensor::Allocate(DataType::kFloat, Shape(stat_dims)), inv_t = Tensor::Allocate(DataType::kFloat, Shape(stat_dims));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.Data<float>() + r * width;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < width; ++i) mean += xr[i] / double(width);
    for (int64_t i = 0; i < width; ++i) var += (xr[i] - mean) * (xr[i] - mean) / double(width);
    const double inv = 1 / std::sqrt(var + 1e-5);
    for (int64_t i = 0; i < width; ++i)
      y.Data<float>()[r * width + i] =
          float((xr[i] - mean) * inv * scale.Data<float>()[i] + (with_bias ? bias.Data<float>()[i] : 0.0f));
    mean_t.Data<float>()[r] = float(mean);
    inv_t.Data<float>()[r] = float(inv);
  }
  OpTester t("LayerNormalization", 17);
  t.Attr("axis", axis);
  t.Input("X", x).Input("Scale", scale, true);
  if (with_bias) t.Input("B", bias, true);
  t.Output("Y", y);
  if (stats) t.Output("Mean", mean_t).Output("InvStdDev", inv_t);
  t.Run();
}

TEST(NormalizationOpTest, LayerNormLastAxis) { CheckLayerNorm({2, 5, 16}, -1, true, false); }
TEST(NormalizationOpTest, LayerNormTwoAxesWithStats) { CheckLayerNorm({3, 4, 6}, 1, false, true); }
TEST(NormalizationOpTest, LayerNormAxisZero) { CheckLayerNorm({3, 7}, 0, true, true); }

TEST(NormalizationOpTest, LayerNormBadScaleFails) {
  OpTester t("LayerNormalization", 17);
  t.Input("X", RandomTensor(DataType::kFloat, {2, 4}, 1)).Input("Scale", RandomTensor(DataType::kFloat, {3}, 2));
  t.OutputName("Y").ExpectFailure("does not broadcast");
  t.Run({"cpu"});
}

TEST(NormalizationOpTest, InstanceNorm) {
  const Shape xs{2, 3, 5, 4};
  Tensor x = RandomTensor(DataType::kFloat, xs, 1), scale = RandomTensor(DataType::kFloat, {3}, 2);
  Tensor bias = RandomTensor(DataType::kFloat, {3}, 3);
  Tensor y = Tensor::Allocate(DataType::kFloat, xs);
  for (int64_t p = 0; p < 6; ++p) {
    const float* xp = x.Data<float>() + p * 20;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < 20; ++i) mean += xp[i] / 20.0;
    for (int64_t i = 0; i < 20; ++i) var += (xp[i] - mean) * (xp[i] - mean) / 20.0;
    for (int64_t i = 0; i < 20; ++i)
      y.Data<float>()[p * 20 + i] =
          float((xp[i] - mean) / std::sqrt(var + 1e-2) * scale.Data<float>()[p % 3] + bias.Data<float>()[p % 3]);
  }
  OpTester t("InstanceNormalization", 17);
  t.Attr("epsilon", 1e-2f);
  t.Input("input", x).Input("scale", scale).Input("B", bias).Output("Y", y);
  t.Run();
}

}  // namespace
}  // namespace tessera::test
