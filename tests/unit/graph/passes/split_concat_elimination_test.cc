// split_concat_elimination: a Concat of all of a Split's outputs in order reads the Split's input; a Split left with
// one read part becomes a Slice of it, one with none goes (outputs equal the unoptimized graph's bit for bit).
#include <gtest/gtest.h>

#include "graph/passes/nchwc_layout.h"
#include "graph/passes/split_concat_elimination.h"
#include "pass_test_graph.h"

namespace tessera::test {
namespace {

const Config kOff = {{"session.disabled_optimizers", "split_concat_elimination"}};

// YOLOv8's C2f shape without its convolutions: Split(x) -> a, b; m = Relu(b); y = Concat(concat_inputs) along
// `concat_axis` (x [2, 8, 5, 3], split into 3 + 5 channels along axis 1).
PassTestGraph C2fLike(const std::vector<std::string>& concat_inputs, int64_t concat_axis = 1) {
  PassTestGraph g(13);
  g.Input("x", {2, 8, 5, 3}).Output("y");
  g.Int64s("sizes", {2}, {3, 5});
  SetInt(g.Node("Split", {"x", "sizes"}, {"a", "b"}), "axis", 1);
  g.Node("Relu", {"b"}, {"m"});
  SetInt(g.Node("Concat", concat_inputs, {"y"}), "axis", concat_axis);
  return g;
}

TEST(SplitConcatEliminationTest, ConcatOfEveryPartReadsTheInputAndTheSplitBecomesASlice) {
  const PassTestGraph g = C2fLike({"a", "b", "m"});
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
  EXPECT_EQ(Count(ops, "Split"), 0u);
  EXPECT_EQ(Count(ops, "Slice"), 1u);
  EXPECT_EQ(Count(ops, "Concat"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll, kOff), "Split"), 1u);
}

TEST(SplitConcatEliminationTest, NegativeAxesMatchTheirPositiveForms) {
  const PassTestGraph g = C2fLike({"m", "a", "b"}, -3);
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll), "Slice"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
}

TEST(SplitConcatEliminationTest, PartsOutOfOrderOrOnAnotherAxisStay) {
  for (const PassTestGraph& g : {C2fLike({"b", "a", "m"}), C2fLike({"a", "m", "b"})}) {
    EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kAll), "Split"), 1u);
    ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
  }
  PassTestGraph other(13);  // Concat along axis 2 of the parts: not the Split's input
  other.Input("x", {2, 8, 5, 3}).Output("y");
  other.Int64s("sizes", {2}, {4, 4});
  SetInt(other.Node("Split", {"x", "sizes"}, {"a", "b"}), "axis", 1);
  SetInt(other.Node("Concat", {"a", "b"}, {"y"}), "axis", 2);
  EXPECT_EQ(Count(OpsAt(other, OptimizationLevel::kAll), "Split"), 1u);
  ExpectSameOutputs(other, OptimizationLevel::kAll, 0.0f);
}

TEST(SplitConcatEliminationTest, SplitWithNoOtherReaderGoes) {
  PassTestGraph g(13);
  g.Input("x", {2, 9, 4}).Output("y");
  g.Node("Relu", {"x"}, {"r"});
  SetInt(g.Node("Split", {"r"}, {"p", "q", "s"}), "axis", 1);  // three equal parts, no sizes
  g.Node("Sigmoid", {"x"}, {"t"});
  SetInt(g.Node("Concat", {"t", "p", "q", "s"}, {"y"}), "axis", 1);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"Relu", "Sigmoid", "Concat"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
}

TEST(SplitConcatEliminationTest, EqualPartsOfAKnownAxisBecomeASlice) {
  PassTestGraph g(13);
  g.Input("x", {2, 8, 4}).Output("y");
  g.Node("Relu", {"x"}, {"r"});
  SetInt(g.Node("Split", {"r"}, {"p", "q"}), "axis", 1);
  g.Node("Sigmoid", {"q"}, {"m"});
  SetInt(g.Node("Concat", {"p", "q", "m"}, {"y"}), "axis", 1);
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
  EXPECT_EQ(Count(ops, "Split"), 0u);
  EXPECT_EQ(Count(ops, "Slice"), 1u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
}

TEST(SplitConcatEliminationTest, APartThatIsAGraphOutputKeepsTheSplit) {
  PassTestGraph g(13);
  g.Input("x", {2, 8, 5, 3}).Output("y").Output("a");
  g.Int64s("sizes", {2}, {3, 5});
  SetInt(g.Node("Split", {"x", "sizes"}, {"a", "b"}), "axis", 1);
  g.Node("Relu", {"b"}, {"m"});
  SetInt(g.Node("Concat", {"a", "b", "m"}, {"y"}), "axis", 1);
  const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
  EXPECT_EQ(Count(ops, "Split"), 1u);  // a and b are both still read
  ExpectSameOutputs(g, OptimizationLevel::kAll, 0.0f);
}

// In 8-channel blocks (the AVX2 CPU layout) the blocked Split counts whole blocks along axis 1, and so does the Slice.
TEST(SplitConcatEliminationTest, BlockedSplitBecomesASliceOfWholeBlocks) {
  PassTestGraph g(13);
  g.Input("x", {1, 16, 6, 6}).Output("y");
  AddConv(g, "x", "c1", 16, 16, 1, 0);
  g.Int64s("sizes", {2}, {8, 8});
  SetInt(g.Node("Split", {"c1", "sizes"}, {"a", "b"}), "axis", 1);
  AddConv(g, "b", "m", 8, 8, 3, 1);
  SetInt(g.Node("Concat", {"a", "b", "m"}, {"cat"}), "axis", 1);
  AddConv(g, "cat", "y", 24, 16, 1, 0);
  std::unique_ptr<Model> model = LoadForPasses(g);
  Graph& graph = *model->graph;
  const CanFuse yes = [](const Node&, const Graph&, const std::string&, const std::string&, size_t) { return true; };
  ASSERT_GT(ConvertToBlockedLayout(graph, yes, 8), 0u);
  EXPECT_EQ(EliminateSplitConcat(graph), 1u);
  const Node* slice = nullptr;
  const Node* concat = nullptr;
  for (const auto& node : graph.nodes) {
    EXPECT_NE(node->op_type, "Split");
    if (node->op_type == "Slice") slice = node.get();
    if (node->op_type == "Concat") concat = node.get();
  }
  ASSERT_NE(slice, nullptr);
  ASSERT_NE(concat, nullptr);
  const auto value = [&](const std::string& name) { return ConstantTensor(graph, name)->ToVector<int64_t>(); };
  EXPECT_EQ(value(slice->inputs[1]), std::vector<int64_t>{1});  // the second block of 8 channels
  EXPECT_EQ(value(slice->inputs[2]), std::vector<int64_t>{2});
  EXPECT_EQ(value(slice->inputs[3]), std::vector<int64_t>{1});
  ASSERT_EQ(concat->inputs.size(), 2u);
  EXPECT_EQ(concat->inputs[0], slice->inputs[0]);  // the blocked c1 in one piece
  EXPECT_EQ(concat->GetInt("axis", 0), 1);
}

}  // namespace
}  // namespace tessera::test
