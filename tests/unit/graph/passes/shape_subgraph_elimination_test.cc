#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), index)), [-1])): the chain PyTorch emits for
// x.view(x.shape[index], -1).
PassTestGraph ReshapeByShapeChain(const std::vector<int64_t>& x_dims, int64_t index) {
  PassTestGraph g;
  g.Input("x", x_dims).Output("y");
  g.Int64s("index", {}, {index}).Int64s("zero", {1}, {0}).Int64s("minus_one", {1}, {-1});
  g.Node("Shape", {"x"}, {"shape"});
  SetInt(g.Node("Gather", {"shape", "index"}, {"dim"}), "axis", 0);
  g.Node("Unsqueeze", {"dim", "zero"}, {"dim_1d"});
  SetInt(g.Node("Concat", {"dim_1d", "minus_one"}, {"target"}), "axis", 0);
  g.Node("Reshape", {"x", "target"}, {"reshaped"});
  g.Node("Relu", {"reshaped"}, {"y"});
  return g;
}

TEST(ShapeSubgraphEliminationTest, FoldsChainWhenShapeIsStatic) {
  const PassTestGraph g = ReshapeByShapeChain({2, 3, 4}, 0);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kBasic),
            (std::vector<std::string>{"Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Relu"}));
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Reshape", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f);
}

TEST(ShapeSubgraphEliminationTest, FoldsGatherOfConcreteDimWhenOtherDimsAreSymbolic) {
  const PassTestGraph g = ReshapeByShapeChain({-1, 3, 4}, 2);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Reshape", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f, /*symbolic_size=*/5);
}

// A symbolic dim gathered at its own position of the target: the target becomes the constant [0, -1] (Reshape copies
// x's dim 0), whatever x's dims.
TEST(ShapeSubgraphEliminationTest, TurnsASymbolicDimAtItsOwnPositionIntoACopy) {
  const PassTestGraph g = ReshapeByShapeChain({-1, 3, 4}, 0);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Reshape", "Relu"}));
  for (int64_t n : {1, 3, 7}) ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f, /*symbolic_size=*/n);
}

// Symbolic dims the rule cannot copy stay computed: dim 0 of x at position 1 of the target, and a dim of another value.
TEST(ShapeSubgraphEliminationTest, KeepsGatherOfSymbolicDimElsewhere) {
  for (bool other_value : {false, true}) {
    PassTestGraph g;
    g.Input("x", {-1, 3, 4}).Input("z", {-1, 2}).Output("y");
    g.Int64s("index", {}, {0}).Int64s("zero", {1}, {0}).Int64s("minus_one", {1}, {-1});
    g.Node("Shape", {other_value ? "z" : "x"}, {"shape"});
    SetInt(g.Node("Gather", {"shape", "index"}, {"dim"}), "axis", 0);
    g.Node("Unsqueeze", {"dim", "zero"}, {"dim_1d"});
    if (other_value) SetInt(g.Node("Concat", {"dim_1d", "minus_one"}, {"target"}), "axis", 0);
    else SetInt(g.Node("Concat", {"minus_one", "dim_1d"}, {"target"}), "axis", 0);
    g.Node("Reshape", {"x", "target"}, {"reshaped"});
    g.Node("Relu", {"reshaped"}, {"y"});
    const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kExtended);
    EXPECT_EQ(Count(ops, "Shape"), 1u) << (other_value ? "another value's dim" : "another position");
    EXPECT_EQ(Count(ops, "Gather"), 1u);
    ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f, /*symbolic_size=*/3);
  }
}

// The head split of transformer exports: x [N, S, 12] viewed as [N, S, 3, 4] with N and S gathered from x's shape
// (two Shape nodes, as PyTorch writes them) becomes a Reshape to the constant [0, 0, 3, 4].
TEST(ShapeSubgraphEliminationTest, FoldsTheHeadSplitOverSymbolicBatchAndSequence) {
  PassTestGraph g;
  g.Input("x", {-1, -1, 12}).Output("y");
  g.Int64s("i0", {}, {0}).Int64s("i1", {}, {1}).Int64s("axes", {1}, {0});
  g.Int64s("heads", {1}, {3}).Int64s("head", {1}, {4});
  g.Node("Shape", {"x"}, {"shape_a"});
  g.Node("Shape", {"x"}, {"shape_b"});
  SetInt(g.Node("Gather", {"shape_a", "i0"}, {"n"}), "axis", 0);
  SetInt(g.Node("Gather", {"shape_b", "i1"}, {"s"}), "axis", 0);
  g.Node("Unsqueeze", {"n", "axes"}, {"n_1d"});
  g.Node("Unsqueeze", {"s", "axes"}, {"s_1d"});
  SetInt(g.Node("Concat", {"n_1d", "s_1d", "heads", "head"}, {"target"}), "axis", 0);
  g.Node("Reshape", {"x", "target"}, {"split"});
  SetInts(g.Node("Transpose", {"split"}, {"y"}), "perm", {0, 2, 1, 3});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Reshape", "Transpose"}));
  for (int64_t n : {1, 2, 5}) ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f, /*symbolic_size=*/n);
}

}  // namespace
}  // namespace tessera::test
