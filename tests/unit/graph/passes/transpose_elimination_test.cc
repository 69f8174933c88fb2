#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// x[2,3,4] -> Transpose(first) -> Transpose(second) -> (Relu ->) y
PassTestGraph TwoTransposes(const std::vector<int64_t>& first, const std::vector<int64_t>& second, bool relu = true) {
  PassTestGraph g;
  g.Input("x", {2, 3, 4}).Output("y");
  SetInts(g.Node("Transpose", {"x"}, {"t1"}), "perm", first);
  SetInts(g.Node("Transpose", {"t1"}, {relu ? "t2" : "y"}), "perm", second);
  if (relu) g.Node("Relu", {"t2"}, {"y"});
  return g;
}

TEST(TransposeEliminationTest, RemovesPairThatCancels) {
  const PassTestGraph g = TwoTransposes({1, 2, 0}, {2, 0, 1});
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kBasic), "Transpose"), 2u);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"Relu"});
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f);
}

TEST(TransposeEliminationTest, MergesPairIntoOne) {
  const PassTestGraph g = TwoTransposes({1, 0, 2}, {0, 2, 1});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Transpose", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f);
}

TEST(TransposeEliminationTest, CancellingPairThatWritesAGraphOutputBecomesIdentity) {
  const PassTestGraph g = TwoTransposes({1, 0, 2}, {1, 0, 2}, /*relu=*/false);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), std::vector<std::string>{"Identity"});
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f);
}

}  // namespace
}  // namespace tessera::test
