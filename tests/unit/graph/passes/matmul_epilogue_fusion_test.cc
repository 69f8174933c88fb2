#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x[N,3,8] -> MatMul(W[8,6]) -> m
PassTestGraph MatMulGraph(int opset = 17) {
  PassTestGraph g(opset);
  g.Input("x", {-1, 3, 8}).Output("y");
  g.Floats("W", {8, 6}, PassTestGraph::Random(48, -1, 1, 11)).Floats("bias", {6}, PassTestGraph::Random(6, -1, 1, 12));
  g.Node("MatMul", {"x", "W"}, {"m"});
  return g;
}

TEST(MatMulEpilogueFusionTest, FusesBiasAndGelu) {
  PassTestGraph g = MatMulGraph(20);
  g.Node("Add", {"bias", "m"}, {"biased"});
  g.Node("Gelu", {"biased"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"MatMul", "Add", "Gelu"}));
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

// A float16 model's projection: float16 weights and bias (the bias must have the product's type).
TEST(MatMulEpilogueFusionTest, FusesFloat16BiasAndGelu) {
  PassTestGraph g(20);
  g.Input("x32", {-1, 3, 8}).Output("y");
  SetInt(g.Node("Cast", {"x32"}, {"x"}), "to", 10);
  g.Halves("W", {8, 6}, PassTestGraph::Random(48, -1, 1, 11)).Halves("bias", {6}, PassTestGraph::Random(6, -1, 1, 12));
  g.Node("MatMul", {"x", "W"}, {"m"});
  g.Node("Add", {"bias", "m"}, {"biased"});
  g.Node("Gelu", {"biased"}, {"g"});
  SetInt(g.Node("Cast", {"g"}, {"y"}), "to", 1);
  // Float16 values between nodes (as on EPs that compute in float16; the CPU EP's default runs this region in
  // float32, float32_regions_test.cc).
  const Config half_values = {{"session.float16_in_float32", "0"}};
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, half_values), (std::vector<std::string>{"Cast", "FusedMatMul", "Cast"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 4e-3f, 2, half_values);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 4e-3f);
}

TEST(MatMulEpilogueFusionTest, FusesBiasAndResidual) {
  PassTestGraph g = MatMulGraph();
  g.Input("r", {-1, 3, 6});
  g.Node("Add", {"m", "bias"}, {"biased"});
  g.Node("Add", {"r", "biased"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

TEST(MatMulEpilogueFusionTest, FusesScaleBiasReluAndResidual) {
  PassTestGraph g = MatMulGraph();
  g.Input("r", {-1, 3, 6}).Scalar("c", 0.5f);
  g.Node("Div", {"m", "c"}, {"scaled"});
  g.Node("Add", {"scaled", "bias"}, {"biased"});
  g.Node("Relu", {"biased"}, {"act"});
  g.Node("Add", {"act", "r"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

// The attention-score pattern: Q x K^T, scaled, plus a mask that broadcasts over heads and rows.
TEST(MatMulEpilogueFusionTest, FusesScaleAndBroadcastMaskOnBatchedProduct) {
  PassTestGraph g;
  g.Input("q", {-1, 4, 5, 8}).Input("k", {-1, 4, 8, 5}).Input("mask", {-1, 1, 1, 5}).Output("y");
  g.Scalar("scale", 8.0f);
  g.Node("MatMul", {"q", "k"}, {"scores"});
  g.Node("Div", {"scores", "scale"}, {"scaled"});
  g.Node("Add", {"scaled", "mask"}, {"masked"});
  g.Node("Softmax", {"masked"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul", "Softmax"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

// An addend that widens the product ([3,6] + [2,3,6]) still gives ONNX's broadcast result.
TEST(MatMulEpilogueFusionTest, AddendThatWidensTheResult) {
  PassTestGraph g;
  g.Input("x", {3, 8}).Input("r", {2, 3, 6}).Output("y");
  g.Floats("W", {8, 6}, PassTestGraph::Random(48, -1, 1, 13));
  g.Node("MatMul", {"x", "W"}, {"m"});
  g.Node("Add", {"m", "r"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

TEST(MatMulEpilogueFusionTest, BiasOfWrongLengthIsAnAddend) {
  PassTestGraph g = MatMulGraph();
  g.Floats("one", {1}, {0.75f});
  g.Node("Add", {"m", "one"}, {"biased"});
  g.Node("Tanh", {"biased"}, {"y"});
  // [1] is not a bias of N = 6 elements, so the Add ends the pattern as the addend; Tanh stays.
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul", "Tanh"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

TEST(MatMulEpilogueFusionTest, KeepsPatternWhenIntermediateHasOtherReaders) {
  PassTestGraph g = MatMulGraph();
  g.Node("Add", {"m", "bias"}, {"biased"});
  g.Node("Relu", {"biased"}, {"y"});
  g.Output("m");
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"MatMul", "Add", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll);
}

TEST(MatMulEpilogueFusionTest, LeavesPlainMatMulAlone) {
  PassTestGraph g = MatMulGraph();
  g.Node("Softmax", {"m"}, {"y"});
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll), "FusedMatMul"), 0u);
}

}  // namespace
}  // namespace tessera::test
