#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// The decomposed layer normalization PyTorch emits before opset 17, over axis `axis` of x[2,5,8].
// Opset 18 passes ReduceMean's axes as an input instead of an attribute.
PassTestGraph DecomposedLayerNorm(int opset, int64_t axis, bool with_bias = true) {
  PassTestGraph g(opset);
  g.Input("x", {-1, 5, 8}).Output("y");
  g.Scalar("two", 2.0f).Scalar("eps", 1e-5f).Int64s("axes", {1}, {axis});
  g.Floats("gamma", {8}, PassTestGraph::Random(8, 0.5f, 1.5f, 3))
      .Floats("beta", {8}, PassTestGraph::Random(8, -0.5f, 0.5f, 4));
  auto mean = [&](const std::string& in, const std::string& out) {
    if (opset >= 18)
      g.Node("ReduceMean", {in, "axes"}, {out});
    else
      SetInts(g.Node("ReduceMean", {in}, {out}), "axes", {axis});
  };
  mean("x", "mu");
  g.Node("Sub", {"x", "mu"}, {"d"});
  g.Node("Pow", {"d", "two"}, {"d2"});
  mean("d2", "var");
  g.Node("Add", {"var", "eps"}, {"var_eps"});
  g.Node("Sqrt", {"var_eps"}, {"std"});
  g.Node("Div", {"d", "std"}, {"normalized"});
  g.Node("Mul", {"gamma", "normalized"}, {with_bias ? "scaled" : "y"});
  if (with_bias) g.Node("Add", {"scaled", "beta"}, {"y"});
  return g;
}

TEST(LayerNormFusionTest, FusesOpset13Pattern) {
  const PassTestGraph g = DecomposedLayerNorm(13, -1);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kBasic), "ReduceMean"), 2u);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"LayerNormalization"});
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-4f);
}

TEST(LayerNormFusionTest, FusesOpset18PatternWithAxesInputAndNoBias) {
  const PassTestGraph g = DecomposedLayerNorm(18, -1, /*with_bias=*/false);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"LayerNormalization"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-4f);
}

TEST(LayerNormFusionTest, FusesWhenAxisIsLastByIndex) {
  const PassTestGraph g = DecomposedLayerNorm(13, 2);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"LayerNormalization"});
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 1e-4f);
}

TEST(LayerNormFusionTest, LeavesNormalizationOverOtherAxesAlone) {
  const PassTestGraph g = DecomposedLayerNorm(13, 1);
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kExtended);
  EXPECT_EQ(Count(ops, "LayerNormalization"), 0u);
  EXPECT_EQ(Count(ops, "ReduceMean"), 2u);
}

}  // namespace
}  // namespace tessera::test
