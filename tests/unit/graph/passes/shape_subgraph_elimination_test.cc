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

TEST(ShapeSubgraphEliminationTest, KeepsGatherOfSymbolicDim) {
  const PassTestGraph g = ReshapeByShapeChain({-1, 3, 4}, 0);
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kExtended);
  EXPECT_EQ(Count(ops, "Shape"), 1u);
  EXPECT_EQ(Count(ops, "Gather"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f, /*symbolic_size=*/3);
}

}  // namespace
}  // namespace tessera::test
