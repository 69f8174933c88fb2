#include "tessera/ep/graph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

Node& AddNode(Graph& graph, const std::string& op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs, const std::string& name = "") {
  auto node = std::make_unique<Node>();
  node->op_type = op_type;
  node->name = name.empty() ? outputs.at(0) : name;
  node->opset = 17;
  node->inputs = std::move(inputs);
  node->outputs = std::move(outputs);
  graph.nodes.push_back(std::move(node));
  return *graph.nodes.back();
}

ValueInfo TensorInfo(const std::string& name, DataType type) {
  ValueInfo info;
  info.name = name;
  info.type = type;
  return info;
}

std::vector<std::string> NodeNames(const Graph& graph) {
  std::vector<std::string> names;
  for (const auto& node : graph.nodes) names.push_back(node->name);
  return names;
}

// Expects `fn` to throw Error(kInvalidModel) whose message contains every part.
template <typename Fn>
void ExpectInvalidModel(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidModel);
    for (const std::string& part : parts)
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

Attribute IntAttribute(const std::string& name, int64_t value) {
  Attribute attribute;
  attribute.name = name;
  attribute.type = Attribute::Type::kInt;
  attribute.i = value;
  return attribute;
}

TEST(GraphNodeTest, TypedGettersReturnValuesAndFallbacks) {
  Node node;
  node.op_type = "Conv";
  node.name = "conv1";
  node.opset = 17;
  node.attributes["group"] = IntAttribute("group", 4);
  Attribute pads;
  pads.type = Attribute::Type::kInts;
  pads.ints = {1, 2, 3, 4};
  node.attributes["pads"] = pads;
  Attribute alpha;
  alpha.type = Attribute::Type::kFloat;
  alpha.f = 0.5f;
  node.attributes["alpha"] = alpha;
  Attribute mode;
  mode.type = Attribute::Type::kString;
  mode.s = "NOTSET";
  node.attributes["auto_pad"] = mode;

  EXPECT_EQ(node.GetInt("group"), 4);
  EXPECT_EQ(node.GetInt("missing", 7), 7);
  EXPECT_EQ(node.GetInts("pads"), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(node.GetInts("strides", {1, 1}), (std::vector<int64_t>{1, 1}));
  EXPECT_FLOAT_EQ(node.GetFloat("alpha"), 0.5f);
  EXPECT_FLOAT_EQ(node.GetFloat("beta", 2.0f), 2.0f);
  EXPECT_EQ(node.GetString("auto_pad"), "NOTSET");
  EXPECT_EQ(node.GetString("other", "x"), "x");
  EXPECT_TRUE(node.GetFloats("scales").empty());
  EXPECT_EQ(node.GetStrings("names", {"a"}), (std::vector<std::string>{"a"}));
}

TEST(GraphNodeTest, GetterErrorsNameTheNodeAndAttribute) {
  Node node;
  node.op_type = "Conv";
  node.name = "conv1";
  node.opset = 17;
  node.attributes["group"] = IntAttribute("group", 4);
  ExpectInvalidModel([&] { node.GetFloat("group"); }, {"Conv 'conv1' (opset 17)", "'group'", "int", "float"});
  ExpectInvalidModel([&] { node.GetInts("group"); }, {"conv1", "ints"});
  ExpectInvalidModel([&] { node.GetInt("kernel_shape"); }, {"conv1", "'kernel_shape'", "missing"});
  ExpectInvalidModel([&] { node.GetTensor("value"); }, {"conv1", "'value'"});
  ExpectInvalidModel([&] { node.GetGraph("body"); }, {"conv1", "'body'"});
}

TEST(GraphNodeTest, DescribeAndNumInputs) {
  Node node;
  node.op_type = "FusedConv";
  node.name = "f";
  node.domain = "com.microsoft";
  node.opset = 1;
  EXPECT_EQ(node.Describe(), "FusedConv 'f' (com.microsoft opset 1)");
  node.inputs = {"x", "", "b", "", ""};
  EXPECT_EQ(node.NumInputs(), 3u);
  EXPECT_TRUE(node.HasInput(2));
  EXPECT_FALSE(node.HasInput(1));
  EXPECT_FALSE(node.HasInput(9));
}

TEST(GraphValueInfoTest, ShapeStringShowsSymbolsAndUnknowns) {
  ValueInfo info;
  EXPECT_EQ(info.ShapeString(), "?");
  info.shape = std::vector<Dim>{Dim{-1, "batch", ""}, Dim{3, "", ""}, Dim{}};
  EXPECT_EQ(info.ShapeString(), "[batch,3,?]");
}

TEST(GraphSortTest, SortsByDependencyAndKeepsFileOrderOtherwise) {
  Graph graph;
  graph.inputs.push_back(TensorInfo("x", DataType::kFloat));
  AddNode(graph, "Relu", {"b"}, {"c"});
  AddNode(graph, "Neg", {"x"}, {"a"});
  AddNode(graph, "Abs", {"x"}, {"z"});
  AddNode(graph, "Add", {"a", "a"}, {"b"});
  graph.outputs.push_back(TensorInfo("c", DataType::kFloat));
  graph.TopologicalSort();
  EXPECT_EQ(NodeNames(graph), (std::vector<std::string>{"a", "z", "b", "c"}));
}

TEST(GraphSortTest, SortedGraphIsUnchanged) {
  Graph graph;
  graph.inputs.push_back(TensorInfo("x", DataType::kFloat));
  AddNode(graph, "Neg", {"x"}, {"d"});
  AddNode(graph, "Neg", {"x"}, {"c"});
  AddNode(graph, "Add", {"c", "d"}, {"b"});
  AddNode(graph, "Neg", {"x"}, {"a"});
  graph.TopologicalSort();
  EXPECT_EQ(NodeNames(graph), (std::vector<std::string>{"d", "c", "b", "a"}));
}

TEST(GraphSortTest, CycleIsReportedWithANode) {
  Graph graph;
  graph.inputs.push_back(TensorInfo("x", DataType::kFloat));
  AddNode(graph, "Add", {"x", "q"}, {"p"}, "first");
  AddNode(graph, "Neg", {"p"}, {"q"}, "second");
  ExpectInvalidModel([&] { graph.TopologicalSort(); }, {"Add 'first'", "cycle"});
}

TEST(GraphSortTest, UndefinedInputIsReported) {
  Graph graph;
  graph.inputs.push_back(TensorInfo("x", DataType::kFloat));
  AddNode(graph, "Add", {"x", "ghost"}, {"y"}, "adder");
  ExpectInvalidModel([&] { graph.TopologicalSort(); }, {"Add 'adder'", "'ghost'"});
}

TEST(GraphSortTest, OuterScopeNamesAndInitializersCountAsDefined) {
  Graph graph;
  graph.initializers["w"] = Tensor::FromVector<float>({1}, {2.0f});
  AddNode(graph, "Mul", {"outer", "w"}, {"y"});
  EXPECT_NO_THROW(graph.TopologicalSort({"outer"}));
  ExpectInvalidModel([&] { graph.TopologicalSort(); }, {"'outer'"});
}

TEST(GraphSortTest, TwoProducersOfOneValueAreRejected) {
  Graph graph;
  graph.inputs.push_back(TensorInfo("x", DataType::kFloat));
  AddNode(graph, "Neg", {"x"}, {"y"}, "one");
  AddNode(graph, "Abs", {"x"}, {"y"}, "two");
  ExpectInvalidModel([&] { graph.TopologicalSort(); }, {"'y'", "Neg 'one'", "Abs 'two'"});
}

TEST(GraphSortTest, UndefinedGraphOutputIsReported) {
  Graph graph;
  graph.outputs.push_back(TensorInfo("nowhere", DataType::kFloat));
  ExpectInvalidModel([&] { graph.TopologicalSort(); }, {"'nowhere'"});
}

// An If node whose branch reads `late`, produced further down the file: the branch's outer-scope
// read is an implicit input, so the producer must come first.
TEST(GraphSortTest, SubgraphOuterScopeReadsOrderTheParent) {
  Graph graph;
  graph.inputs.push_back(TensorInfo("cond", DataType::kBool));
  graph.inputs.push_back(TensorInfo("x", DataType::kFloat));
  Node& if_node = AddNode(graph, "If", {"cond"}, {"y"}, "branch");
  auto then_branch = std::make_shared<Graph>();
  then_branch->parent = &graph;
  AddNode(*then_branch, "Neg", {"late"}, {"t"});
  then_branch->outputs.push_back(TensorInfo("t", DataType::kFloat));
  Attribute attribute;
  attribute.name = "then_branch";
  attribute.type = Attribute::Type::kGraph;
  attribute.g = then_branch;
  if_node.attributes["then_branch"] = attribute;
  AddNode(graph, "Abs", {"x"}, {"late"});

  EXPECT_EQ(then_branch->OuterScopeReferences(), (std::set<std::string>{"late"}));
  graph.TopologicalSort();
  EXPECT_EQ(NodeNames(graph), (std::vector<std::string>{"late", "branch"}));
  EXPECT_TRUE(graph.OuterScopeReferences().empty());
}

TEST(GraphLookupTest, ValueInfosResolveThroughParents) {
  Graph outer;
  outer.inputs.push_back(TensorInfo("x", DataType::kFloat));
  outer.value_infos["x"] = TensorInfo("x", DataType::kFloat);
  outer.initializers["w"] = Tensor::FromVector<int64_t>({2}, {1, 2});
  outer.outputs.push_back(TensorInfo("x", DataType::kFloat));
  Graph inner;
  inner.parent = &outer;
  inner.value_infos["t"] = TensorInfo("t", DataType::kInt32);

  EXPECT_EQ(inner.TypeOf("t"), DataType::kInt32);
  EXPECT_EQ(inner.TypeOf("x"), DataType::kFloat);
  EXPECT_EQ(inner.TypeOf("w"), DataType::kInt64);
  EXPECT_EQ(inner.TypeOf("nothing"), DataType::kUndefined);
  ASSERT_NE(inner.FindValueInfo("x"), nullptr);
  EXPECT_EQ(inner.FindValueInfo("x")->name, "x");
  EXPECT_EQ(outer.FindValueInfo("t"), nullptr);
  EXPECT_TRUE(outer.IsGraphInput("x"));
  EXPECT_FALSE(outer.IsGraphInput("w"));
  EXPECT_TRUE(outer.IsGraphOutput("x"));
  EXPECT_TRUE(outer.IsInitializer("w"));
}

}  // namespace
}  // namespace tessera
