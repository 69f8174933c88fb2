// shared_input_matmul_fusion: products of one input with constant weights merge into one product and a Split
// (the query, key and value projections of attention), with their biases; products that differ (another input,
// activation, weight rows, an addend, non-constant weights) stay apart. Outputs equal the unmerged graph's.
#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x [N, 5, 8] -> three projections q, k, v of widths 6, 6, 4 with biases, each read further.
PassTestGraph ProjectionsGraph(int opset = 17) {
  PassTestGraph g(opset);
  g.Input("x", {-1, 5, 8}).Output("q_out").Output("k_out").Output("v_out");
  uint32_t seed = 20;
  for (const auto& [name, width] : std::vector<std::pair<std::string, int64_t>>{{"q", 6}, {"k", 6}, {"v", 4}}) {
    g.Floats("W" + name, {8, width}, PassTestGraph::Random(static_cast<size_t>(8 * width), -1, 1, seed++));
    g.Floats("b" + name, {width}, PassTestGraph::Random(static_cast<size_t>(width), -1, 1, seed++));
    g.Node("MatMul", {"x", "W" + name}, {name + "_m"});
    g.Node("Add", {name + "_m", "b" + name}, {name});
    g.Node("Relu", {name}, {name + "_out"});  // readers after the products
  }
  return g;
}

TEST(SharedInputMatMulFusionTest, MergesProjectionsOfOneInputWithTheirBiases) {
  PassTestGraph g = ProjectionsGraph();
  // Each projection's bias joins it (matmul_epilogue_fusion, which also takes the Relu), then the three merge.
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul", "Split"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
  const Config off = {{"session.disabled_optimizers", "shared_input_matmul_fusion"}};
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, off),
            (std::vector<std::string>{"FusedMatMul", "FusedMatMul", "FusedMatMul"}));
}

TEST(SharedInputMatMulFusionTest, Opset11SplitsByAttribute) {
  PassTestGraph g = ProjectionsGraph(11);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul", "Split"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

TEST(SharedInputMatMulFusionTest, PlainProductsMergeAndDifferentOnesStayApart) {
  PassTestGraph g;
  g.Input("x", {2, 8}).Input("other", {2, 8}).Output("a").Output("b").Output("c").Output("d").Output("e");
  g.Floats("W1", {8, 3}, PassTestGraph::Random(24, -1, 1, 1));
  g.Floats("W2", {8, 5}, PassTestGraph::Random(40, -1, 1, 2));
  g.Floats("W3", {4, 5}, PassTestGraph::Random(20, -1, 1, 3));
  g.Node("MatMul", {"x", "W1"}, {"a"});       // merges with b
  g.Node("MatMul", {"x", "W2"}, {"b"});
  g.Node("MatMul", {"other", "W2"}, {"c"});   // another input
  g.Node("MatMul", {"x", "other_t"}, {"d"});  // weights not constant
  SetInts(g.Node("Transpose", {"other"}, {"other_t"}), "perm", {1, 0});
  g.Node("Slice", {"x", "s0", "s4", "s1"}, {"x4"});
  g.Int64s("s0", {1}, {0}).Int64s("s4", {1}, {4}).Int64s("s1", {1}, {1});
  g.Node("MatMul", {"x4", "W3"}, {"e"});      // another input too
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll),
            (std::vector<std::string>{"MatMul", "Split", "MatMul", "Transpose", "MatMul", "Slice", "MatMul"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

TEST(SharedInputMatMulFusionTest, DifferentActivationsStayApart) {
  PassTestGraph g;
  g.Input("x", {3, 8}).Output("p").Output("q");
  g.Floats("W1", {8, 4}, PassTestGraph::Random(32, -1, 1, 4)).Floats("W2", {8, 4}, PassTestGraph::Random(32, -1, 1, 5));
  g.Node("MatMul", {"x", "W1"}, {"m1"});
  g.Node("Relu", {"m1"}, {"p"});
  g.Node("MatMul", {"x", "W2"}, {"m2"});
  g.Node("Sigmoid", {"m2"}, {"q"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"FusedMatMul", "FusedMatMul"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

}  // namespace
}  // namespace tessera::test
