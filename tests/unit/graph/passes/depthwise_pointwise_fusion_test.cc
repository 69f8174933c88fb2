// depthwise_pointwise_fusion: a depthwise convolution and the pointwise convolution that alone reads it become one
// ai.tessera::DepthwisePointwiseConv, only where the EP prefers it (here the CPU EP with depthwise_pointwise = 1, its
// reference kernel; the Vulkan EP always: tests/vulkan), with the activations and the residual conv_activation_fusion
// put on the pair; outputs match the unoptimized graph's.
#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

constexpr float kTolerance = 2e-4f;
const ProviderOptions kFuseOnCpu = {{"depthwise_pointwise", "1"}};

std::vector<std::string> OpsWithPairsFused(const PassTestGraph& g) { return OpsAt(g, OptimizationLevel::kAll, {}, kFuseOnCpu); }
void ExpectPairsFusedOutputs(const PassTestGraph& g) {
  ExpectSameOutputs(g, OptimizationLevel::kAll, kTolerance, 2, {}, kFuseOnCpu);
}

// MobileNetV2's inverted residual (expand 1x1 + Clip, depthwise 3x3 + Clip, project 1x1 + x), then a stride-2 block
// without a residual whose projection ends in a Relu.
PassTestGraph InvertedResiduals() {
  PassTestGraph g(13);
  g.Input("x", {2, 16, 9, 9}).Output("y");
  g.Scalar("lo", 0.0f).Scalar("hi", 6.0f);
  AddConv(g, "x", "expand", 16, 48, 1, 0);
  g.Node("Clip", {"expand", "lo", "hi"}, {"e"});
  AddConv(g, "e", "dw", 48, 48, 3, 1, 48);
  g.Node("Clip", {"dw", "lo", "hi"}, {"d"});
  AddConv(g, "d", "project", 48, 16, 1, 0);
  g.Node("Add", {"project", "x"}, {"block"});
  AddConv(g, "block", "dw2", 16, 16, 3, 1, 16, 2);
  AddConv(g, "dw2", "project2", 16, 24, 1, 0);
  g.Node("Relu", {"project2"}, {"y"});
  return g;
}

TEST(DepthwisePointwiseFusionTest, FusesEachDepthwiseConvolutionIntoItsProjection) {
  const PassTestGraph g = InvertedResiduals();
  const std::vector<std::string> ops = OpsWithPairsFused(g);
  EXPECT_EQ(Count(ops, "DepthwisePointwiseConv"), 2u);
  ExpectPairsFusedOutputs(g);
}

TEST(DepthwisePointwiseFusionTest, CpuEpDoesNotAskForItByDefault) {
  EXPECT_EQ(Count(OpsAt(InvertedResiduals(), OptimizationLevel::kAll), "DepthwisePointwiseConv"), 0u);
}

TEST(DepthwisePointwiseFusionTest, DilatedAsymmetricWindowsAndABroadcastResidual) {
  PassTestGraph g(13);
  g.Input("x", {2, 12, 11, 10}).Output("y");
  g.Floats("dw_W", {12, 1, 3, 3}, PassTestGraph::Random(108, -0.3f, 0.3f, 5));
  onnx::NodeProto& dw = g.Node("Conv", {"x", "dw_W"}, {"dw"});  // no bias
  SetInts(dw, "pads", {2, 1, 0, 2});
  SetInts(dw, "dilations", {2, 1});
  SetInt(dw, "group", 12);
  AddConv(g, "dw", "pw", 12, 20, 1, 0);
  g.Floats("shift", {20, 1, 1}, PassTestGraph::Random(20, -1, 1, 7));
  g.Node("Add", {"pw", "shift"}, {"y"});  // a residual that broadcasts
  EXPECT_EQ(Count(OpsWithPairsFused(g), "DepthwisePointwiseConv"), 1u);
  ExpectPairsFusedOutputs(g);
}

TEST(DepthwisePointwiseFusionTest, DepthwiseOutputReadElsewhereStaysUnfused) {
  PassTestGraph g(13);
  g.Input("x", {1, 8, 6, 6}).Output("y").Output("dw");
  AddConv(g, "x", "dw", 8, 8, 3, 1, 8);  // a graph output too
  AddConv(g, "dw", "y", 8, 4, 1, 0);
  EXPECT_EQ(Count(OpsWithPairsFused(g), "DepthwisePointwiseConv"), 0u);
  ExpectPairsFusedOutputs(g);
}

TEST(DepthwisePointwiseFusionTest, ConsumersThatAreNotPlainPointwiseStayUnfused) {
  for (const char* consumer : {"3x3", "stride 2", "padded", "grouped"}) {
    SCOPED_TRACE(consumer);
    PassTestGraph g(13);
    g.Input("x", {1, 8, 7, 7}).Output("y");
    AddConv(g, "x", "dw", 8, 8, 3, 1, 8);
    const std::string name = consumer;
    if (name == "3x3") AddConv(g, "dw", "y", 8, 4, 3, 1);
    if (name == "stride 2") AddConv(g, "dw", "y", 8, 4, 1, 0, 1, 2);
    if (name == "padded") AddConv(g, "dw", "y", 8, 4, 1, 1);
    if (name == "grouped") AddConv(g, "dw", "y", 8, 4, 1, 0, 2);
    EXPECT_EQ(Count(OpsWithPairsFused(g), "DepthwisePointwiseConv"), 0u);
    ExpectPairsFusedOutputs(g);
  }
}

TEST(DepthwisePointwiseFusionTest, DisabledByName) {
  const Config off = {{"session.disabled_optimizers", "depthwise_pointwise_fusion"}};
  EXPECT_EQ(Count(OpsAt(InvertedResiduals(), OptimizationLevel::kAll, off, kFuseOnCpu), "DepthwisePointwiseConv"), 0u);
}

}  // namespace
}  // namespace tessera::test
