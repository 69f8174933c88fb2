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
};

// x [N, 3, 7, 7] -> Conv(W [4, 3, 3, 3], B, pads 1) -> activation -> Mul(gain) [-> Clip] -> y
PassTestGraph GainBlock(const GainSpec& s) {
  PassTestGraph g;
  g.Input("x", {-1, 3, 7, 7}).Output("y");
  g.Floats("W", {4, 3, 3, 3}, PassTestGraph::Random(108, -1, 1, 7)).Floats("B", {4}, {0.5f, -0.25f, 0.0f, 1.0f});
  g.Floats("gain", s.scale_dims, s.scale);
  SetInts(g.Node("Conv", {"x", "W", "B"}, {"c"}), "pads", {1, 1, 1, 1});
  if (s.activation == "PRelu") {
    g.Floats("slope", {4, 1, 1}, {0.1f, 0.2f, 0.3f, 0.25f});
    g.Node("PRelu", {"c", "slope"}, {"a"});
  } else {
    auto& act = g.Node(s.activation, {"c"}, {"a"});
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

}  // namespace
}  // namespace tessera::test
