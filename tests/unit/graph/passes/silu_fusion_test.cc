#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// v * Sigmoid(v) after a non-convolution producer (a dequantizing Add, an MLP's MatMul) becomes QuickGelu(alpha 1).
TEST(SiluFusionTest, FusesEitherOperandOrder) {
  for (bool gate_first : {false, true}) {
    PassTestGraph g;
    g.Input("x", {-1, 24}).Output("y");
    g.Floats("b", {24}, PassTestGraph::Random(24, -1, 1, 5));
    g.Node("Add", {"x", "b"}, {"v"});
    g.Node("Sigmoid", {"v"}, {"gate"});
    if (gate_first)
      g.Node("Mul", {"gate", "v"}, {"y"});
    else
      g.Node("Mul", {"v", "gate"}, {"y"});
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Add", "Sigmoid", "Mul"}));
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Add", "QuickGelu"}));
    ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);  // rounded as Sigmoid then Mul
  }
}

// After a Conv the SiLU goes into the convolution (conv_activation_fusion runs first).
TEST(SiluFusionTest, LeavesAConvolutionsSiluToTheConvolution) {
  PassTestGraph g;
  g.Input("x", {1, 4, 6, 6}).Output("y");
  g.Floats("W", {8, 4, 3, 3}, PassTestGraph::Random(288, -1, 1, 7));
  SetInts(g.Node("Conv", {"x", "W"}, {"c"}), "pads", {1, 1, 1, 1});
  g.Node("Sigmoid", {"c"}, {"gate"});
  g.Node("Mul", {"c", "gate"}, {"y"});
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
  EXPECT_EQ(Count(ops, "QuickGelu"), 0u);
  EXPECT_EQ(Count(ops, "Sigmoid"), 0u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

// A gate read elsewhere, or a product of a value with another value's Sigmoid, is not SiLU.
TEST(SiluFusionTest, KeepsOtherProducts) {
  PassTestGraph g;
  g.Input("x", {-1, 8}).Input("z", {-1, 8}).Output("y").Output("w").Output("gate2");
  g.Node("Sigmoid", {"z"}, {"gate"});
  g.Node("Mul", {"x", "gate"}, {"y"});
  g.Node("Sigmoid", {"x"}, {"gate2"});
  g.Node("Mul", {"x", "gate2"}, {"w"});
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll), "QuickGelu"), 0u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
}

TEST(SiluFusionTest, CanBeDisabledByName) {
  PassTestGraph g;
  g.Input("x", {-1, 8}).Output("y");
  g.Node("Sigmoid", {"x"}, {"gate"});
  g.Node("Mul", {"x", "gate"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"QuickGelu"});
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll, {{"session.disabled_optimizers", "silu_fusion"}}), "QuickGelu"),
            0u);
}

}  // namespace
}  // namespace tessera::test
