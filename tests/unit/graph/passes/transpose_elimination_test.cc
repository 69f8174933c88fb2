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

// GPT-2 decoding one token: [1, 1, 12, 64] -> perm (0, 2, 1, 3) moves only axes of size 1.
TEST(TransposeEliminationTest, TransposeOfUnitAxesBecomesAReshape) {
  PassTestGraph g;
  g.Input("x", {1, 1, 3, 4}).Output("y");
  SetInts(g.Node("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1, 3});
  g.Node("Relu", {"t"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Reshape", "Relu"}));
  ExpectSameOutputs(g, OptimizationLevel::kExtended, 0.0f);
}

TEST(TransposeEliminationTest, KeepsTransposesThatReorderData) {
  for (bool symbolic : {false, true}) {
    PassTestGraph g;
    g.Input("x", {symbolic ? -1 : 2, 3, 1}).Output("y");  // a symbolic dim: the shape is not known
    SetInts(g.Node("Transpose", {"x"}, {"t"}), "perm", symbolic ? std::vector<int64_t>{2, 0, 1} : std::vector<int64_t>{1, 0, 2});
    g.Node("Relu", {"t"}, {"y"});
    EXPECT_EQ(OpsAt(g, OptimizationLevel::kExtended), (std::vector<std::string>{"Transpose", "Relu"}));
  }
}

}  // namespace
}  // namespace tessera::test
