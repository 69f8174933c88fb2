#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x[1,3,6,6] -> Conv(W[4,3,3,3], pads 1[, B]) -> BatchNormalization -> Relu -> y
PassTestGraph ConvBnRelu(bool conv_bias, bool conv_output_is_graph_output = false) {
  PassTestGraph g;
  g.Input("x", {1, 3, 6, 6}).Output("y");
  g.Floats("W", {4, 3, 3, 3}, PassTestGraph::Random(108, -1, 1, 7));
  std::vector<std::string> conv_inputs = {"x", "W"};
  if (conv_bias) {
    g.Floats("B", {4}, {0.5f, -0.25f, 0.0f, 1.0f});
    conv_inputs.push_back("B");
  }
  g.Floats("scale", {4}, {1.5f, 0.5f, -1.0f, 2.0f})
      .Floats("shift", {4}, {0.1f, -0.2f, 0.3f, 0.0f})
      .Floats("mean", {4}, {0.2f, -0.1f, 0.5f, 1.0f})
      .Floats("var", {4}, {0.5f, 1.5f, 2.0f, 0.25f});
  SetInts(g.Node("Conv", conv_inputs, {"c"}), "pads", {1, 1, 1, 1});
  SetFloat(g.Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}), "epsilon", 1e-3f);
  g.Node("Relu", {"bn"}, {"y"});
  if (conv_output_is_graph_output) g.Output("c");
  return g;
}

TEST(ConvBnFoldingTest, FoldsBatchNormIntoConvWithBias) {
  const PassTestGraph g = ConvBnRelu(true);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kBasic), "BatchNormalization"), 1u);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-4f);
}

TEST(ConvBnFoldingTest, FoldsBatchNormIntoConvWithoutBias) {
  const PassTestGraph g = ConvBnRelu(false);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Conv", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-4f);
}

TEST(ConvBnFoldingTest, KeepsBatchNormWhenConvOutputHasOtherReaders) {
  const PassTestGraph g = ConvBnRelu(true, /*conv_output_is_graph_output=*/true);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kExtended), "BatchNormalization"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kExtended);
}

}  // namespace
}  // namespace tessera::test
