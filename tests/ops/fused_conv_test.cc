// ai.tessera::FusedConv against Conv (on the CPU EP) followed by the residual add and the activation
// computed here, on the oneDNN paths (3x3 with blocked layout, 1x1 plain), the broadcast-residual path and
// the double reference path.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

struct FusedConvCase {
  Shape x, w;
  std::vector<int64_t> pads;
  std::string activation;
  std::vector<float> params;
  std::optional<Shape> z;  // residual shape, none when absent
  DataType type = DataType::kFloat;
  std::vector<float> clip = {};  // activation_clip [min, max], none when empty
};

double Activate(const std::string& name, const std::vector<float>& p, double x) {
  if (name == "Relu") return std::max(x, 0.0);
  if (name == "LeakyRelu") return x >= 0 ? x : p[0] * x;
  if (name == "Clip") return std::min<double>(std::max<double>(x, p[0]), p[1]);
  if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "HardSigmoid") return std::min(1.0, std::max(0.0, p[0] * x + p[1]));
  if (name == "HardSwish") return x * std::min(1.0, std::max(0.0, x / 6.0 + 0.5));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Swish") return x / (1.0 + std::exp(-(p.empty() ? 1.0 : p[0]) * x));
  return x;
}

template <typename T>
Tensor Expected(const FusedConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor* z) {
  OpTester conv("Conv", 17);
  if (!c.pads.empty()) conv.Attr("pads", c.pads);
  conv.Input("X", x).Input("W", w, true).Input("B", b, true).OutputName("Y");
  Tensor y = conv.RunOn("cpu")[0];
  T* data = y.Data<T>();
  // Z's element for Y's flat index i, numpy broadcasting (Z right-aligned, its size-1 dims repeated).
  auto z_at = [&](int64_t i) {
    const Shape& ys = y.shape();
    const Shape& zs = z->shape();
    int64_t offset = 0, stride = 1;
    for (int64_t d = static_cast<int64_t>(ys.rank()) - 1, zd = static_cast<int64_t>(zs.rank()) - 1; zd >= 0;
         --d, --zd) {
      const int64_t coord = i % ys[d];
      i /= ys[d];
      if (zs[zd] != 1) offset += coord * stride;
      stride *= zs[zd];
    }
    return static_cast<double>(z->Data<T>()[offset]);
  };
  for (int64_t i = 0; i < y.NumElements(); ++i) {
    double v = data[i];
    if (z) v += z_at(i);
    v = Activate(c.activation, c.params, v);
    if (!c.clip.empty()) v = std::min<double>(std::max<double>(v, c.clip[0]), c.clip[1]);
    data[i] = static_cast<T>(v);
  }
  return y;
}

void Check(const FusedConvCase& c) {
  const Tensor x = RandomTensor(c.type, c.x, 1);
  const Tensor w = RandomTensor(c.type, c.w, 2);
  const Tensor b = RandomTensor(c.type, Shape{c.w[0]}, 3);
  const Tensor z = c.z ? RandomTensor(c.type, *c.z, 4, -2.0, 2.0) : Tensor();
  const Tensor expected = c.type == DataType::kFloat ? Expected<float>(c, x, w, b, c.z ? &z : nullptr)
                                                     : Expected<double>(c, x, w, b, c.z ? &z : nullptr);
  OpTester t("FusedConv", 1, "ai.tessera");
  if (!c.pads.empty()) t.Attr("pads", c.pads);
  if (!c.activation.empty()) t.Attr("activation", c.activation);
  if (!c.params.empty()) t.Attr("activation_params", c.params);
  if (!c.clip.empty()) t.Attr("activation_clip", c.clip);
  t.Input("X", x).Input("W", w, true).Input("B", b, true);
  if (c.z) t.Input("Z", z);
  t.Output("Y", expected).Tolerance(1e-4, 1e-4).Run();
}

TEST(FusedConvTest, SpatialKernelWithResidualAndRelu) {
  Check({Shape{1, 8, 9, 9}, Shape{16, 8, 3, 3}, {1, 1, 1, 1}, "Relu", {}, Shape{1, 16, 9, 9}});
}

TEST(FusedConvTest, PointwiseKernelWithClip) {
  Check({Shape{2, 16, 7, 7}, Shape{24, 16, 1, 1}, {}, "Clip", {0.0f, 0.5f}, std::nullopt});
}

TEST(FusedConvTest, PointwiseKernelWithResidualOnly) {
  Check({Shape{1, 16, 7, 7}, Shape{16, 16, 1, 1}, {}, "", {}, Shape{1, 16, 7, 7}});
}

TEST(FusedConvTest, BroadcastResidualWithLeakyRelu) {
  Check({Shape{1, 4, 6, 6}, Shape{8, 4, 3, 3}, {1, 1, 1, 1}, "LeakyRelu", {0.2f}, Shape{8, 1, 1}});
  // A per-pixel map shared by every channel (StyleGAN-style noise inputs): [H, W] and [1, 1, H, W].
  Check({Shape{2, 4, 6, 7}, Shape{8, 4, 1, 1}, {0, 0, 0, 0}, "LeakyRelu", {0.2f}, Shape{6, 7}});
  Check({Shape{2, 4, 6, 7}, Shape{8, 4, 1, 1}, {0, 0, 0, 0}, "", {}, Shape{1, 1, 6, 7}});
  // Broadcast along the last dim: [C, H, 1].
  Check({Shape{1, 4, 6, 7}, Shape{8, 4, 3, 3}, {1, 1, 1, 1}, "Relu", {}, Shape{8, 6, 1}});
}

TEST(FusedConvTest, EveryActivationOnSpatialKernel) {
  for (const auto& [name, params] : std::vector<std::pair<std::string, std::vector<float>>>{
           {"Sigmoid", {}}, {"HardSigmoid", {0.3f, 0.4f}}, {"HardSwish", {}}, {"Tanh", {}}, {"Clip", {-0.5f, 0.5f}},
           {"Swish", {1.0f}}, {"Swish", {1.7f}}}) {
    SCOPED_TRACE(name);
    Check({Shape{1, 4, 6, 6}, Shape{8, 4, 3, 3}, {1, 1, 1, 1}, name, params, std::nullopt});
  }
}

TEST(FusedConvTest, DoubleRunsTheReferencePath) {
  Check({Shape{1, 3, 5, 5}, Shape{4, 3, 3, 3}, {1, 1, 1, 1}, "HardSigmoid", {0.2f, 0.5f}, Shape{1, 4, 5, 5},
         DataType::kDouble});
}

TEST(FusedConvTest, RejectsUnknownActivation) {
  OpTester t("FusedConv", 1, "ai.tessera");
  t.Attr("activation", std::string("Softplus"));
  t.Input("X", RandomTensor(DataType::kFloat, Shape{1, 2, 4, 4}, 1))
      .Input("W", RandomTensor(DataType::kFloat, Shape{2, 2, 3, 3}, 2), true)
      .OutputName("Y")
      .ExpectFailure("unsupported activation 'Softplus'")
      .Run({"cpu"});
}

// activation_clip: the activation's result clamped, as a oneDNN post-op (blocked 3x3, plain 1x1) and on the double
// reference path; both limits reached.
TEST(FusedConvTest, ActivationClipClampsTheActivation) {
  Check({Shape{1, 8, 9, 9}, Shape{16, 8, 3, 3}, {1, 1, 1, 1}, "LeakyRelu", {0.2f}, Shape{1, 16, 9, 9},
         DataType::kFloat, {-0.3f, 0.4f}});
  Check({Shape{2, 16, 7, 7}, Shape{24, 16, 1, 1}, {}, "Relu", {}, std::nullopt, DataType::kFloat, {0.0f, 0.25f}});
  // Activations that end with a clip of their own (the clamp folds into it), limits overlapping or not.
  for (DataType type : {DataType::kFloat, DataType::kDouble}) {
    Check({Shape{1, 8, 9, 9}, Shape{16, 8, 3, 3}, {1, 1, 1, 1}, "Clip", {-0.5f, 0.5f}, std::nullopt, type,
           {-0.25f, 0.3f}});
    Check({Shape{1, 8, 9, 9}, Shape{16, 8, 3, 3}, {1, 1, 1, 1}, "Clip", {-0.5f, 0.1f}, std::nullopt, type,
           {0.2f, 0.3f}});
    Check({Shape{2, 16, 7, 7}, Shape{24, 16, 1, 1}, {}, "HardSigmoid", {0.3f, 0.4f}, std::nullopt, type,
           {0.25f, 0.6f}});
  }
  Check({Shape{1, 3, 5, 5}, Shape{4, 3, 3, 3}, {1, 1, 1, 1}, "Tanh", {}, std::nullopt, DataType::kDouble,
         {-0.5f, 0.5f}});
}

TEST(FusedConvTest, RejectsAnActivationClipWithoutAnActivationOrWithLimitsOutOfOrder) {
  for (const auto& [activation, limits, message] :
       std::vector<std::tuple<std::string, std::vector<float>, std::string>>{
           {"", {-1.0f, 1.0f}, "activation_clip clamps an activation; the node has none"},
           {"Relu", {1.0f, -1.0f}, "activation_clip must be [min, max] with min <= max"},
           {"Relu", {1.0f}, "activation_clip must be [min, max] with min <= max, got 1 value(s)"}}) {
    OpTester t("FusedConv", 1, "ai.tessera");
    if (!activation.empty()) t.Attr("activation", activation);
    t.Attr("activation_clip", limits);
    t.Input("X", RandomTensor(DataType::kFloat, Shape{1, 2, 4, 4}, 1))
        .Input("W", RandomTensor(DataType::kFloat, Shape{2, 2, 3, 3}, 2), true)
        .OutputName("Y")
        .ExpectFailure(message)
        .Run({"cpu"});
  }
}

}  // namespace
}  // namespace tessera::test
