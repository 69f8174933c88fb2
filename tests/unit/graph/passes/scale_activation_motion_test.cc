// scale_activation_motion: a positive constant Mul after a convolution's Relu / LeakyRelu / PRelu moves before the
// activation, where conv_affine_folding folds it into the weights.
#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

struct GainSpec {
  std::string activation = "LeakyRelu";  // Relu, LeakyRelu (alpha 0.2) or PRelu (a constant slope per channel)
  std::vector<int64_t> scale_dims = {};   // {} : a scalar
  std::vector<float> scale = {1.41421356f};
  bool activation_read_twice = false;     // the activation's output also a graph output
  bool clip = true;                       // MI-GAN's lrelu_agc ends with Clip(-256, 256)
  std::vector<int64_t> residual_dims = {-1};  // {-1}: none; else a constant added to the convolution's output
  bool residual_input = false;            // the residual a graph input instead of a constant
};

// x [N, 3, 7, 7] -> Conv(W [4, 3, 3, 3], B, pads 1) -> activation -> Mul(gain) [-> Clip] -> y
PassTestGraph GainBlock(const GainSpec& s) {
  PassTestGraph g;
  g.Input("x", {-1, 3, 7, 7}).Output("y");
  g.Floats("W", {4, 3, 3, 3}, PassTestGraph::Random(108, -1, 1, 7)).Floats("B", {4}, {0.5f, -0.25f, 0.0f, 1.0f});
  g.Floats("gain", s.scale_dims, s.scale);
  SetInts(g.Node("Conv", {"x", "W", "B"}, {"conv"}), "pads", {1, 1, 1, 1});
  std::string c = "conv";
  if (s.residual_dims != std::vector<int64_t>{-1}) {  // MI-GAN's noise: a constant map added before the activation
    int64_t count = 1;
    for (int64_t d : s.residual_dims) count *= d;
    if (s.residual_input)
      g.Input("noise", s.residual_dims);
    else
      g.Floats("noise", s.residual_dims, PassTestGraph::Random(count, -1, 1, 9));
    g.Node("Add", {"conv", "noise"}, {"c"});
    c = "c";
  }
  if (s.activation == "PRelu") {
    g.Floats("slope", {4, 1, 1}, {0.1f, 0.2f, 0.3f, 0.25f});
    g.Node("PRelu", {c, "slope"}, {"a"});
  } else {
    auto& act = g.Node(s.activation, {c}, {"a"});
    if (s.activation == "LeakyRelu") SetFloat(act, "alpha", 0.2f);
  }
  if (s.activation_read_twice) g.Output("a");
  g.Node("Mul", {"a", "gain"}, {s.clip ? "m" : "y"});
  if (s.clip) {
    g.Floats("lo", {}, {-1.5f}).Floats("hi", {}, {1.5f});
    g.Node("Clip", {"m", "lo", "hi"}, {"y"});
  }
  return g;
}

TEST(ScaleActivationMotionTest, FoldsTheGainAfterLeakyReluIntoTheConvolution) {
  const GainSpec s;
  const PassTestGraph g = GainBlock(s);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kBasic), (std::vector<std::string>{"Conv", "LeakyRelu", "Mul", "Clip"}));
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "LeakyRelu", "Clip"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f, 2);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f, 2);
}

TEST(ScaleActivationMotionTest, FoldsPerChannelGainsAfterReluAndPRelu) {
  for (const char* activation : {"Relu", "PRelu"}) {
    GainSpec s;
    s.activation = activation;
    s.scale_dims = {4, 1, 1};
    s.scale = {0.5f, 2.0f, 1.0f, 3.0f};
    s.clip = false;
    const PassTestGraph g = GainBlock(s);
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", activation})) << activation;
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f, 2);
  }
}

TEST(ScaleActivationMotionTest, KeepsNegativeOrZeroGains) {
  for (float gain : {-1.5f, 0.0f}) {
    GainSpec s;
    s.scale = {gain};
    const PassTestGraph g = GainBlock(s);
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "LeakyRelu", "Mul", "Clip"}))
        << gain;
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f, 2);
  }
  GainSpec mixed;
  mixed.scale_dims = {4, 1, 1};
  mixed.scale = {0.5f, -2.0f, 1.0f, 3.0f};
  EXPECT_EQ(Count(OpsAt(GainBlock(mixed), OptimizationLevel::kExtended), "Mul"), 1u);
}

// A gain of a higher rank than the feature map would widen it: [1, 1, 1, 1, 1] makes the output 5-D.
TEST(ScaleActivationMotionTest, KeepsAGainThatWidensTheOutput) {
  GainSpec s;
  s.scale_dims = {1, 1, 1, 1, 1};
  s.clip = false;
  const PassTestGraph g = GainBlock(s);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kExtended), "Mul"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f, 2);
}

TEST(ScaleActivationMotionTest, KeepsTheGainWhenTheActivationHasOtherReaders) {
  GainSpec s;
  s.activation_read_twice = true;
  const PassTestGraph g = GainBlock(s);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "LeakyRelu", "Mul", "Clip"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f, 2);
}

TEST(ScaleActivationMotionTest, CanBeDisabled) {
  const PassTestGraph g = GainBlock({});
  const Config off = {{"session.disabled_optimizers", "scale_activation_motion"}};
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended, off), (std::vector<std::string>{"Conv", "LeakyRelu", "Mul", "Clip"}));
}

// MI-GAN's blocks add a constant noise map between the convolution and the activation: the gain scales it too (a
// product of constants folded at creation) and goes into the weights; with the Clip after it, the CPU EP's FusedConv
// then takes the noise as its residual and the Clip as its activation_clip. A residual fed at run time keeps the gain.
TEST(ScaleActivationMotionTest, FoldsTheGainThroughAConstantResidual) {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1, 1, 7, 7}, {4, 1, 1}, {}}) {
    GainSpec s;
    s.residual_dims = dims;
    if (dims.size() == 3) {
      s.scale_dims = {4, 1, 1};
      s.scale = {0.5f, 2.0f, 1.0f, 3.0f};
    }
    const PassTestGraph g = GainBlock(s);
    SCOPED_TRACE(::testing::Message() << dims.size() << "-D residual");
    // A per-channel or scalar residual is a bias: conv_affine_folding takes it into B as well.
    const std::vector<std::string> folded = dims.size() == 4 ? std::vector<std::string>{"Conv", "Add", "LeakyRelu", "Clip"}
                                                             : std::vector<std::string>{"Conv", "LeakyRelu", "Clip"};
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), folded);
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedConv"}));
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f, 2);
    ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f, 2);
  }
  GainSpec fed;
  fed.residual_dims = {1, 1, 7, 7};
  fed.residual_input = true;
  const PassTestGraph g = GainBlock(fed);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended),
            (std::vector<std::string>{"Conv", "Add", "LeakyRelu", "Mul", "Clip"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-5f, 2);
}

}  // namespace
}  // namespace tessera::test
