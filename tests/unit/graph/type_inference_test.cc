#include "graph/type_inference.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

class TypeInferenceTest : public ::testing::Test {
 protected:
  void Input(const std::string& name, DataType type, Graph* graph = nullptr) {
    Graph& target = graph ? *graph : graph_;
    ValueInfo info;
    info.name = name;
    info.type = type;
    target.inputs.push_back(info);
    target.value_infos[name] = info;
  }

  Node& Add(const std::string& op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
            Graph* graph = nullptr) {
    auto node = std::make_unique<Node>();
    node->op_type = op_type;
    node->name = op_type + "_" + std::to_string(graph_.nodes.size());
    node->opset = 17;
    node->inputs = std::move(inputs);
    node->outputs = std::move(outputs);
    Graph& target = graph ? *graph : graph_;
    target.nodes.push_back(std::move(node));
    return *target.nodes.back();
  }

  static void SetInt(Node& node, const std::string& key, int64_t value) {
    Attribute& attribute = node.attributes[key];
    attribute.name = key;
    attribute.type = Attribute::Type::kInt;
    attribute.i = value;
  }

  static void SetGraph(Node& node, const std::string& key, std::shared_ptr<Graph> graph) {
    Attribute& attribute = node.attributes[key];
    attribute.name = key;
    attribute.type = Attribute::Type::kGraph;
    attribute.g = std::move(graph);
  }

  std::shared_ptr<Graph> Subgraph() {
    auto graph = std::make_shared<Graph>();
    graph->parent = &graph_;
    return graph;
  }

  DataType TypeOf(const std::string& value) { return graph_.TypeOf(value); }
  ValueInfo::Kind KindOf(const std::string& value) {
    const ValueInfo* info = graph_.FindValueInfo(value);
    return info ? info->kind : ValueInfo::Kind::kUnknown;
  }

  Graph graph_;
};

TEST_F(TypeInferenceTest, DefaultTakesTheFirstTypedInput) {
  Input("x", DataType::kFloat16);
  Add("Add", {"", "x"}, {"y"});
  Add("Relu", {"y"}, {"z"});
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("y"), DataType::kFloat16);
  EXPECT_EQ(TypeOf("z"), DataType::kFloat16);
}

TEST_F(TypeInferenceTest, CastAndCastLike) {
  Input("x", DataType::kFloat);
  Input("like", DataType::kInt8);
  SetInt(Add("Cast", {"x"}, {"c"}), "to", static_cast<int64_t>(DataType::kDouble));
  Add("CastLike", {"x", "like"}, {"cl"});
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("c"), DataType::kDouble);
  EXPECT_EQ(TypeOf("cl"), DataType::kInt8);
}

TEST_F(TypeInferenceTest, CastToUnknownTypeIsAModelError) {
  Input("x", DataType::kFloat);
  SetInt(Add("Cast", {"x"}, {"c"}), "to", 99);
  try {
    InferElementTypes(graph_);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(error.what()).find("Cast"), std::string::npos);
  }
}

TEST_F(TypeInferenceTest, IndexAndShapeOpsGiveInt64) {
  Input("x", DataType::kFloat);
  for (const char* op : {"Shape", "Size", "NonZero", "ArgMax", "ArgMin"}) Add(op, {"x"}, {std::string(op) + "_out"});
  Add("TopK", {"x", "k"}, {"values", "indices"});
  Add("MaxPool", {"x"}, {"pooled", "pool_indices"});
  Input("k", DataType::kInt64);
  InferElementTypes(graph_);
  for (const char* op : {"Shape", "Size", "NonZero", "ArgMax", "ArgMin"})
    EXPECT_EQ(TypeOf(std::string(op) + "_out"), DataType::kInt64) << op;
  EXPECT_EQ(TypeOf("values"), DataType::kFloat);
  EXPECT_EQ(TypeOf("indices"), DataType::kInt64);
  EXPECT_EQ(TypeOf("pooled"), DataType::kFloat);
  EXPECT_EQ(TypeOf("pool_indices"), DataType::kInt64);
}

TEST_F(TypeInferenceTest, ComparisonsAndLogicGiveBool) {
  Input("x", DataType::kFloat);
  const std::vector<std::string> ops = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And",
                                        "Or", "Xor", "Not", "IsNaN", "IsInf"};
  for (const std::string& op : ops) Add(op, {"x", "x"}, {op + "_out"});
  InferElementTypes(graph_);
  for (const std::string& op : ops) EXPECT_EQ(TypeOf(op + "_out"), DataType::kBool) << op;
}

TEST_F(TypeInferenceTest, ConstantsTakeTheirAttributeType) {
  Input("shape", DataType::kInt64);
  Add("ConstantOfShape", {"shape"}, {"default_fill"});
  Node& filled = Add("ConstantOfShape", {"shape"}, {"int_fill"});
  Attribute value;
  value.name = "value";
  value.type = Attribute::Type::kTensor;
  value.t = Tensor::FromVector<int32_t>({1}, {3});
  filled.attributes["value"] = value;
  Add("Constant", {}, {"tensor_constant"}).attributes["value"] = value;
  Attribute floats;
  floats.name = "value_floats";
  floats.type = Attribute::Type::kFloats;
  floats.floats = {1.0f};
  Add("Constant", {}, {"float_constant"}).attributes["value_floats"] = floats;
  SetInt(Add("Constant", {}, {"int_constant"}), "value_int", 4);
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("default_fill"), DataType::kFloat);
  EXPECT_EQ(TypeOf("int_fill"), DataType::kInt32);
  EXPECT_EQ(TypeOf("tensor_constant"), DataType::kInt32);
  EXPECT_EQ(TypeOf("float_constant"), DataType::kFloat);
  EXPECT_EQ(TypeOf("int_constant"), DataType::kInt64);
}

TEST_F(TypeInferenceTest, DtypeAttributes) {
  Input("x", DataType::kInt32);
  SetInt(Add("EyeLike", {"x"}, {"eye"}), "dtype", static_cast<int64_t>(DataType::kDouble));
  Add("EyeLike", {"x"}, {"eye_default"});
  Add("RandomNormal", {}, {"normal"});
  SetInt(Add("RandomUniform", {}, {"uniform"}), "dtype", static_cast<int64_t>(DataType::kFloat16));
  Add("RandomUniformLike", {"x"}, {"uniform_like"});
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("eye"), DataType::kDouble);
  EXPECT_EQ(TypeOf("eye_default"), DataType::kInt32);
  EXPECT_EQ(TypeOf("normal"), DataType::kFloat);
  EXPECT_EQ(TypeOf("uniform"), DataType::kFloat16);
  EXPECT_EQ(TypeOf("uniform_like"), DataType::kInt32);
}

TEST_F(TypeInferenceTest, QuantizationAndRangeAndWhere) {
  Input("x", DataType::kFloat);
  Input("scale", DataType::kFloat);
  Input("zp", DataType::kInt8);
  Input("q", DataType::kUInt8);
  Input("cond", DataType::kBool);
  Input("start", DataType::kInt32);
  Add("QuantizeLinear", {"x", "scale", "zp"}, {"q_int8"});
  Add("QuantizeLinear", {"x", "scale"}, {"q_default"});
  Add("DequantizeLinear", {"q", "scale"}, {"dq"});
  Add("Range", {"start", "start", "start"}, {"range"});
  Add("Where", {"cond", "x", "x"}, {"selected"});
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("q_int8"), DataType::kInt8);
  EXPECT_EQ(TypeOf("q_default"), DataType::kUInt8);
  EXPECT_EQ(TypeOf("dq"), DataType::kFloat);
  EXPECT_EQ(TypeOf("range"), DataType::kInt32);
  EXPECT_EQ(TypeOf("selected"), DataType::kFloat);
}

TEST_F(TypeInferenceTest, AnnotatedTypesAreKept) {
  Input("x", DataType::kFloat);
  ValueInfo annotated;
  annotated.name = "y";
  annotated.type = DataType::kDouble;
  graph_.value_infos["y"] = annotated;
  Add("Relu", {"x"}, {"y"});
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("y"), DataType::kDouble);
}

TEST_F(TypeInferenceTest, IfTakesBranchOutputsAndBranchesSeeOuterScope) {
  Input("cond", DataType::kBool);
  Input("x", DataType::kInt64);
  auto then_branch = Subgraph();
  Add("Neg", {"x"}, {"then_out"}, then_branch.get());
  then_branch->outputs.push_back(ValueInfo{"then_out", ValueInfo::Kind::kTensor, DataType::kUndefined, {}});
  Node& node = Add("If", {"cond"}, {"y"});
  SetGraph(node, "then_branch", then_branch);
  graph_.outputs.push_back(ValueInfo{"y", ValueInfo::Kind::kTensor, DataType::kUndefined, {}});
  InferElementTypes(graph_);
  EXPECT_EQ(then_branch->TypeOf("then_out"), DataType::kInt64);
  EXPECT_EQ(then_branch->outputs[0].type, DataType::kInt64);
  EXPECT_EQ(TypeOf("y"), DataType::kInt64);
  EXPECT_EQ(graph_.outputs[0].type, DataType::kInt64);
}

TEST_F(TypeInferenceTest, LoopMapsCarriedAndScanOutputs) {
  Input("trip", DataType::kInt64);
  Input("cond", DataType::kBool);
  Input("state", DataType::kDouble);
  auto body = Subgraph();
  Input("i", DataType::kInt64, body.get());
  Input("c", DataType::kBool, body.get());
  Input("s", DataType::kDouble, body.get());
  Add("Identity", {"c"}, {"c_out"}, body.get());
  Add("Neg", {"s"}, {"s_out"}, body.get());
  Add("Cast", {"i"}, {"scan_out"}, body.get());
  SetInt(*body->nodes.back(), "to", static_cast<int64_t>(DataType::kInt32));
  for (const char* name : {"c_out", "s_out", "scan_out"})
    body->outputs.push_back(ValueInfo{name, ValueInfo::Kind::kTensor, DataType::kUndefined, {}});
  SetGraph(Add("Loop", {"trip", "cond", "state"}, {"final_state", "stacked"}), "body", body);
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("final_state"), DataType::kDouble);
  EXPECT_EQ(TypeOf("stacked"), DataType::kInt32);
}

TEST_F(TypeInferenceTest, SequencesCarryTheirKind) {
  Input("x", DataType::kFloat);
  Input("index", DataType::kInt64);
  Add("SequenceConstruct", {"x", "x"}, {"seq"});
  Add("SequenceAt", {"seq", "index"}, {"item"});
  Add("Identity", {"seq"}, {"seq_copy"});
  Add("SequenceLength", {"seq"}, {"length"});
  Add("SequenceEmpty", {}, {"empty"});
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("seq"), DataType::kFloat);
  EXPECT_EQ(KindOf("seq"), ValueInfo::Kind::kSequence);
  EXPECT_EQ(KindOf("seq_copy"), ValueInfo::Kind::kSequence);
  EXPECT_EQ(TypeOf("item"), DataType::kFloat);
  EXPECT_EQ(KindOf("item"), ValueInfo::Kind::kTensor);
  EXPECT_EQ(TypeOf("length"), DataType::kInt64);
  EXPECT_EQ(TypeOf("empty"), DataType::kFloat);
  EXPECT_EQ(KindOf("empty"), ValueInfo::Kind::kSequence);
}

TEST_F(TypeInferenceTest, NonDefaultDomainUsesTheDefaultRule) {
  Input("x", DataType::kFloat16);
  Node& node = Add("Shape", {"x"}, {"y"});
  node.domain = "com.example";
  InferElementTypes(graph_);
  EXPECT_EQ(TypeOf("y"), DataType::kFloat16);
}

}  // namespace
}  // namespace tessera
