// depthwise_input_activation: a channel-inner convolution's Relu / Clip moves into the depthwise convolution that
// alone reads its output (ai.tessera::ActivatedNchwcConv), only where the EP prefers that op (here the CPU EP with
// activated_depthwise = 1; the CUDA EP always: tests/cuda), exactly (outputs equal the unoptimized graph's).
#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

constexpr float kTolerance = 2e-4f;
const ProviderOptions kActivatedDepthwise = {{"activated_depthwise", "1"}};

std::vector<std::string> OpsActivated(const PassTestGraph& g) {
  return OpsAt(g, OptimizationLevel::kAll, {}, kActivatedDepthwise);
}
void ExpectActivatedOutputs(const PassTestGraph& g) {
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance, 2, {}, kActivatedDepthwise);
}

// MobileNetV2's inverted residual: expand (1x1, Clip lo..hi) -> depthwise 3x3 (Clip) -> project (1x1) + x, then a
// stride-2 block whose expansion ends in `second` (Relu or Clip) read by a padded depthwise convolution.
PassTestGraph InvertedResiduals(float lo = 0.0f, float hi = 6.0f, const std::string& second = "Relu") {
  PassTestGraph g(13);
  g.Input("x", {2, 16, 9, 9}).Output("y");
  g.Scalar("lo", lo).Scalar("hi", hi);
  AddConv(g, "x", "expand", 16, 64, 1, 0);
  g.Node("Clip", {"expand", "lo", "hi"}, {"e"});
  AddConv(g, "e", "dw", 64, 64, 3, 1, 64);
  g.Node("Clip", {"dw", "lo", "hi"}, {"d"});
  AddConv(g, "d", "project", 64, 16, 1, 0);
  g.Node("Add", {"project", "x"}, {"block"});
  AddConv(g, "block", "expand2", 16, 32, 1, 0);
  g.Node(second, {"expand2"}, {"e2"});
  AddConv(g, "e2", "dw2", 32, 32, 3, 1, 32, 2);
  g.Node("Clip", {"dw2", "lo", "hi"}, {"y"});
  return g;
}

TEST(DepthwiseInputActivationTest, MovesClipAndReluIntoTheDepthwiseConvolutions) {
  const PassTestGraph g = InvertedResiduals();
  const std::vector<std::string> ops = OpsActivated(g);
  EXPECT_EQ(Count(ops, "ActivatedNchwcConv"), 2u);
  EXPECT_EQ(Count(ops, "NchwcConv"), 2u);  // expand and expand2; project reads the plain x as its residual
  ExpectActivatedOutputs(g);
}

TEST(DepthwiseInputActivationTest, CpuEpDoesNotAskForItByDefault) {
  const std::vector<std::string> ops = OpsAt(InvertedResiduals(), OptimizationLevel::kAll);
  EXPECT_EQ(Count(ops, "ActivatedNchwcConv"), 0u);
  EXPECT_EQ(Count(ops, "NchwcConv"), 4u);
}

TEST(DepthwiseInputActivationTest, ClipLimitsFloat16CannotHoldStayWithTheProducer) {
  // 0.1 and 6.05 are not float16 values: clipping would not commute with rounding to float16.
  const PassTestGraph g = InvertedResiduals(0.1f, 6.05f, "Sigmoid");
  const std::vector<std::string> ops = OpsActivated(g);
  EXPECT_EQ(Count(ops, "ActivatedNchwcConv"), 0u);  // Sigmoid does not commute with rounding either
  ExpectActivatedOutputs(g);
}

TEST(DepthwiseInputActivationTest, ClipWithPositiveLowerLimitKeepsZeroPadding) {
  // Padding taps stay zeros (the depthwise convolution pads the activated X), not Clip(0) = 1.
  const PassTestGraph g = InvertedResiduals(1.0f, 4.0f);
  EXPECT_EQ(Count(OpsActivated(g), "ActivatedNchwcConv"), 2u);
  ExpectActivatedOutputs(g);
}

TEST(DepthwiseInputActivationTest, ActivationReadElsewhereStaysWithTheProducer) {
  PassTestGraph g(13);
  g.Input("x", {1, 16, 8, 8}).Output("y").Output("e");
  AddConv(g, "x", "expand", 16, 32, 1, 0);
  g.Node("Relu", {"expand"}, {"e"});  // a graph output too
  AddConv(g, "e", "dw", 32, 32, 3, 1, 32);
  g.Node("Relu", {"dw"}, {"y"});
  EXPECT_EQ(Count(OpsActivated(g), "ActivatedNchwcConv"), 0u);
  ExpectActivatedOutputs(g);
}

TEST(DepthwiseInputActivationTest, DenseConsumerStaysAsItIs) {
  PassTestGraph g(13);
  g.Input("x", {1, 16, 8, 8}).Output("y");
  AddConv(g, "x", "c1", 16, 32, 1, 0);
  g.Node("Relu", {"c1"}, {"a"});
  AddConv(g, "a", "c2", 32, 32, 3, 1);  // group 1: not depthwise
  g.Node("Relu", {"c2"}, {"y"});
  EXPECT_EQ(Count(OpsActivated(g), "ActivatedNchwcConv"), 0u);
}

TEST(DepthwiseInputActivationTest, DisabledByName) {
  const Config off = {{"session.disabled_optimizers", "depthwise_input_activation"}};
  EXPECT_EQ(Count(OpsAt(InvertedResiduals(), OptimizationLevel::kAll, off, kActivatedDepthwise), "ActivatedNchwcConv"),
            0u);
}

}  // namespace
}  // namespace tessera::test
