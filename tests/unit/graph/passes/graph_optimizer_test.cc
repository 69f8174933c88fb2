// The optimization pipeline as a session configures it: session config "session.disabled_optimizers" turns passes off
// by name, and names it does not know are refused with the list of those it does.
#include "graph/passes/graph_optimizer.h"

#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

PassTestGraph ResidualLayerNorm() {
  PassTestGraph g;
  g.Input("x", {-1, 5, 8}).Input("r", {-1, 5, 8}).Output("y");
  g.Floats("gamma", {8}, PassTestGraph::Random(8, 0.5f, 1.5f, 3));
  g.Node("Add", {"x", "r"}, {"sum"});
  g.Node("LayerNormalization", {"sum", "gamma"}, {"y"});
  return g;
}

TEST(GraphOptimizerTest, DisabledPassesDoNotRun) {
  const PassTestGraph g = ResidualLayerNorm();
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), std::vector<std::string>{"SkipLayerNormalization"});
  const Config off = {{"session.disabled_optimizers", "gelu_fusion, skip_layer_norm_fusion"}};
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, off), (std::vector<std::string>{"Add", "LayerNormalization"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-6f, 2, off);
}

TEST(GraphOptimizerTest, UnknownPassNamesAreRefused) {
  const PassTestGraph g = ResidualLayerNorm();
  try {
    OpsAt(g, OptimizationLevel::kAll, {{"session.disabled_optimizers", "constant_folding,no_such_pass"}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("unknown pass 'no_such_pass' (known: constant_folding,"), std::string::npos)
        << e.what();
  }
}

TEST(GraphOptimizerTest, NamesEveryPass) {
  const std::vector<std::string>& names = OptimizerPassNames();
  for (const char* pass : {"constant_folding", "skip_layer_norm_fusion", "matmul_epilogue_fusion", "nchwc_layout"})
    EXPECT_NE(std::find(names.begin(), names.end(), pass), names.end()) << pass;
}

}  // namespace
}  // namespace tessera::test
