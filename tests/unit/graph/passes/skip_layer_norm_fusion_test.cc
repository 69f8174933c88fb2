#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x[N,5,8] + r -> LayerNormalization(gamma, beta) -> y, with the residual `r` of shape `residual`.
PassTestGraph ResidualLayerNorm(const std::vector<int64_t>& residual = {-1, 5, 8}) {
  PassTestGraph g;
  g.Input("x", {-1, 5, 8}).Input("r", residual).Output("y");
  g.Floats("gamma", {8}, PassTestGraph::Random(8, 0.5f, 1.5f, 3))
      .Floats("beta", {8}, PassTestGraph::Random(8, -0.5f, 0.5f, 4));
  g.Node("Add", {"x", "r"}, {"sum"});
  g.Node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"});
  return g;
}

TEST(SkipLayerNormFusionTest, FusesResidualAddAndLayerNorm) {
  const PassTestGraph g = ResidualLayerNorm();
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kBasic), (std::vector<std::string>{"Add", "LayerNormalization"}));
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"SkipLayerNormalization"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-6f);
}

TEST(SkipLayerNormFusionTest, FusesBroadcastResidual) {
  const PassTestGraph g = ResidualLayerNorm({5, 8});  // e.g. position embeddings
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"SkipLayerNormalization"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-6f, 3);
}

// MatMul -> Add(bias) -> Add(residual) -> LayerNormalization without beta, as in BERT's output blocks.
TEST(SkipLayerNormFusionTest, AbsorbsTheBiasAddOfTheProjection) {
  PassTestGraph g;
  g.Input("x", {-1, 5, 8}).Input("r", {-1, 5, 8}).Output("y");
  g.Floats("w", {8, 8}, PassTestGraph::Random(64, -0.5f, 0.5f, 1)).Floats("b", {8}, PassTestGraph::Random(8, -1, 1, 2));
  g.Floats("gamma", {8}, PassTestGraph::Random(8, 0.5f, 1.5f, 3));
  g.Node("MatMul", {"x", "w"}, {"h"});
  g.Node("Add", {"b", "h"}, {"hb"});
  g.Node("Add", {"r", "hb"}, {"sum"});
  g.Node("LayerNormalization", {"sum", "gamma"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"MatMul", "Add", "Add", "LayerNormalization"}));
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"MatMul", "SkipLayerNormalization"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

// Pre-LN transformer (GPT-2): the residual stream `sum` is read again after the normalized branch.
TEST(SkipLayerNormFusionTest, KeepsTheSumWhenItHasOtherReaders) {
  PassTestGraph g = ResidualLayerNorm();
  g.Output("z");
  g.Node("Add", {"sum", "y"}, {"z"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"SkipLayerNormalization", "Add"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-6f);
}

TEST(SkipLayerNormFusionTest, KeepsTheSumWhenItIsAGraphOutput) {
  PassTestGraph g = ResidualLayerNorm();
  g.Output("sum");
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"SkipLayerNormalization"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-6f);
}

TEST(SkipLayerNormFusionTest, LeavesLayerNormWithStatisticsOutputsAlone) {
  PassTestGraph g;
  g.Input("x", {-1, 5, 8}).Input("r", {-1, 5, 8}).Output("y").Output("mean");
  g.Floats("gamma", {8}, PassTestGraph::Random(8, 0.5f, 1.5f, 3));
  g.Node("Add", {"x", "r"}, {"sum"});
  g.Node("LayerNormalization", {"sum", "gamma"}, {"y", "mean"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Add", "LayerNormalization"}));
}

TEST(SkipLayerNormFusionTest, LeavesNormalizationOverOtherAxesAlone) {
  PassTestGraph g;
  g.Input("x", {-1, 5, 8}).Input("r", {-1, 5, 8}).Output("y");
  g.Floats("gamma", {5, 8}, PassTestGraph::Random(40, 0.5f, 1.5f, 3));
  g.Node("Add", {"x", "r"}, {"sum"});
  SetInt(g.Node("LayerNormalization", {"sum", "gamma"}, {"y"}), "axis", 1);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Add", "LayerNormalization"}));
}

// A scale of one value broadcasts in LayerNormalization; the fused kernel wants one per feature.
TEST(SkipLayerNormFusionTest, LeavesBroadcastScaleAlone) {
  PassTestGraph g;
  g.Input("x", {-1, 5, 8}).Input("r", {-1, 5, 8}).Output("y");
  g.Floats("gamma", {1}, {1.5f});
  g.Node("Add", {"x", "r"}, {"sum"});
  g.Node("LayerNormalization", {"sum", "gamma"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Add", "LayerNormalization"}));
}

TEST(SkipLayerNormFusionTest, LeavesLayerNormOfOtherProducersAlone) {
  PassTestGraph g;
  g.Input("x", {-1, 5, 8}).Input("r", {-1, 5, 8}).Output("y");
  g.Floats("gamma", {8}, PassTestGraph::Random(8, 0.5f, 1.5f, 3));
  g.Node("Mul", {"x", "r"}, {"product"});
  g.Node("LayerNormalization", {"product", "gamma"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Mul", "LayerNormalization"}));
}

}  // namespace
}  // namespace tessera::test
