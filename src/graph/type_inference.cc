// Element-type propagation over a sorted graph. Values the model already types are left alone; the
// rules below fill the rest, one node at a time in execution order, so every input of a node is typed
// (when it can be) before the node is visited.
#include "graph/type_inference.h"

#include <map>

#include <climits>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "tessera/status.h"

namespace tessera {

namespace {

using Kind = ValueInfo::Kind;

// Records (kind, type) for `value` unless it is unnamed, already typed, or `type` is unknown.
void SetType(Graph& graph, const std::string& value, DataType type, Kind kind = Kind::kTensor) {
  if (value.empty() || type == DataType::kUndefined) return;
  ValueInfo& info = graph.value_infos[value];
  if (info.type != DataType::kUndefined) return;
  info.name = value;
  info.kind = kind;
  info.type = type;
}

void SetOutput(Graph& graph, const Node& node, size_t index, DataType type, Kind kind = Kind::kTensor) {
  if (index < node.outputs.size()) SetType(graph, node.outputs[index], type, kind);
}

void SetAllOutputs(Graph& graph, const Node& node, DataType type, Kind kind = Kind::kTensor) {
  for (size_t i = 0; i < node.outputs.size(); ++i) SetOutput(graph, node, i, type, kind);
}

DataType InputType(const Graph& graph, const Node& node, size_t index) {
  return node.HasInput(index) ? graph.TypeOf(node.inputs[index]) : DataType::kUndefined;
}

Kind InputKind(const Graph& graph, const Node& node, size_t index) {
  const ValueInfo* info = node.HasInput(index) ? graph.FindValueInfo(node.inputs[index]) : nullptr;
  return info ? info->kind : Kind::kTensor;
}

// The element type named by an int attribute such as Cast's `to`; validated because it comes from the file.
DataType TypeAttribute(const Node& node, const std::string& key, DataType fallback) {
  if (!node.HasAttribute(key)) return fallback;
  const int64_t value = node.GetInt(key);
  if (value < INT32_MIN || value > INT32_MAX || !IsKnownDataType(static_cast<int32_t>(value)))
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": attribute '", key, "' names unknown element type ", value);
  return static_cast<DataType>(value);
}

// Default rule: every output takes the type and kind of the first input whose type is known.
void FirstTypedInput(Graph& graph, const Node& node) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const DataType type = InputType(graph, node, i);
    if (type == DataType::kUndefined) continue;
    return SetAllOutputs(graph, node, type, InputKind(graph, node, i));
  }
}

DataType ConstantType(const Node& node) {
  for (const auto& [key, attribute] : node.attributes) {
    if (key == "value") return attribute.t.type();
    if (key == "value_float" || key == "value_floats") return DataType::kFloat;
    if (key == "value_int" || key == "value_ints") return DataType::kInt64;
    if (key == "value_string" || key == "value_strings") return DataType::kString;
  }
  return DataType::kUndefined;
}

void InferConstant(Graph& graph, const Node& node) { SetAllOutputs(graph, node, ConstantType(node)); }

void InferConstantOfShape(Graph& graph, const Node& node) {
  const Tensor* value = node.HasAttribute("value") ? &node.GetTensor("value") : nullptr;
  SetAllOutputs(graph, node, value ? value->type() : DataType::kFloat);
}

// Cast-1 names its target type as a string ("FLOAT", "INT32", ...); later versions use the enum.
DataType CastTarget(const Node& node) {
  auto it = node.attributes.find("to");
  if (it == node.attributes.end() || it->second.type != Attribute::Type::kString)
    return TypeAttribute(node, "to", DataType::kUndefined);
  static const std::map<std::string, DataType> kNames = {
      {"FLOAT", DataType::kFloat},   {"UINT8", DataType::kUInt8},     {"INT8", DataType::kInt8},
      {"UINT16", DataType::kUInt16}, {"INT16", DataType::kInt16},     {"INT32", DataType::kInt32},
      {"INT64", DataType::kInt64},   {"STRING", DataType::kString},   {"BOOL", DataType::kBool},
      {"FLOAT16", DataType::kFloat16}, {"DOUBLE", DataType::kDouble}, {"UINT32", DataType::kUInt32},
      {"UINT64", DataType::kUInt64}, {"BFLOAT16", DataType::kBFloat16}};
  auto name = kNames.find(it->second.s);
  return name == kNames.end() ? DataType::kUndefined : name->second;
}

void InferCast(Graph& graph, const Node& node) { SetAllOutputs(graph, node, CastTarget(node)); }
void InferCastLike(Graph& graph, const Node& node) { SetAllOutputs(graph, node, InputType(graph, node, 1)); }
void InferInt64(Graph& graph, const Node& node) { SetAllOutputs(graph, node, DataType::kInt64); }
void InferInt32(Graph& graph, const Node& node) { SetAllOutputs(graph, node, DataType::kInt32); }
// An output typed like input `index` (e.g. a contrib op's float output after its 8-bit operands).
template <size_t index>
void InferLikeInput(Graph& graph, const Node& node) {
  if (node.inputs.size() > index && !node.inputs[index].empty())
    SetAllOutputs(graph, node, graph.TypeOf(node.inputs[index]));
}
void InferBool(Graph& graph, const Node& node) { SetAllOutputs(graph, node, DataType::kBool); }
void InferString(Graph& graph, const Node& node) { SetAllOutputs(graph, node, DataType::kString); }

// Ops whose `dtype` attribute picks the type; otherwise the input's, else float.
void InferDtypeAttribute(Graph& graph, const Node& node) {
  const DataType input = InputType(graph, node, 0);
  const DataType fallback = input != DataType::kUndefined ? input : DataType::kFloat;
  SetAllOutputs(graph, node, TypeAttribute(node, "dtype", fallback));
}

// Window functions and MelWeightMatrix: `output_datatype`, float by default (their input is a size).
void InferOutputDatatype(Graph& graph, const Node& node) {
  SetAllOutputs(graph, node, TypeAttribute(node, "output_datatype", DataType::kFloat));
}

void InferMultinomial(Graph& graph, const Node& node) {
  SetAllOutputs(graph, node, TypeAttribute(node, "dtype", DataType::kInt32));
}

// Output 0 follows the first input, the given output holds int64 indices (TopK, MaxPool).
template <size_t kIndicesOutput>
void InferWithIndices(Graph& graph, const Node& node) {
  SetOutput(graph, node, kIndicesOutput, DataType::kInt64);
  FirstTypedInput(graph, node);
}

void InferUnique(Graph& graph, const Node& node) {
  for (size_t i = 1; i < 4; ++i) SetOutput(graph, node, i, DataType::kInt64);
  FirstTypedInput(graph, node);
}

// The mask is bool from opset 10; before, it has the data's type.
void InferDropout(Graph& graph, const Node& node) {
  if (node.opset >= 10) SetOutput(graph, node, 1, DataType::kBool);
  FirstTypedInput(graph, node);
}

void InferWhere(Graph& graph, const Node& node) { SetAllOutputs(graph, node, InputType(graph, node, 1)); }
void InferOneHot(Graph& graph, const Node& node) { SetAllOutputs(graph, node, InputType(graph, node, 2)); }

void InferQuantizeLinear(Graph& graph, const Node& node) {
  const DataType zero_point = InputType(graph, node, 2);
  SetAllOutputs(graph, node, zero_point != DataType::kUndefined ? zero_point : DataType::kUInt8);
}

void InferDequantizeLinear(Graph& graph, const Node& node) {
  const DataType scale = InputType(graph, node, 1);
  SetAllOutputs(graph, node, scale != DataType::kUndefined ? scale : DataType::kFloat);
}

void InferDynamicQuantizeLinear(Graph& graph, const Node& node) {
  SetOutput(graph, node, 0, DataType::kUInt8);
  SetOutput(graph, node, 1, DataType::kFloat);
  SetOutput(graph, node, 2, DataType::kUInt8);
}

// ---- sequences and optionals -------------------------------------------------------------------

void InferToSequence(Graph& graph, const Node& node) {
  SetAllOutputs(graph, node, InputType(graph, node, 0), Kind::kSequence);
}

void InferFromSequence(Graph& graph, const Node& node) { SetAllOutputs(graph, node, InputType(graph, node, 0)); }

void InferSequenceEmpty(Graph& graph, const Node& node) {
  SetAllOutputs(graph, node, TypeAttribute(node, "dtype", DataType::kFloat), Kind::kSequence);
}

void InferOptional(Graph& graph, const Node& node) {
  const auto type_attribute = node.attributes.find("type");
  const DataType type = type_attribute != node.attributes.end() ? type_attribute->second.type_proto.type
                                                                 : InputType(graph, node, 0);
  SetAllOutputs(graph, node, type, Kind::kOptional);
}

void InferOptionalGetElement(Graph& graph, const Node& node) {
  const Kind input_kind = InputKind(graph, node, 0);
  SetAllOutputs(graph, node, InputType(graph, node, 0), input_kind == Kind::kOptional ? Kind::kTensor : input_kind);
}

// ---- control flow: output types come from the body's outputs -----------------------------------

DataType SubgraphOutputType(const Graph& body, size_t index, Kind* kind) {
  if (index >= body.outputs.size()) return DataType::kUndefined;
  const ValueInfo* info = body.FindValueInfo(body.outputs[index].name);
  *kind = info ? info->kind : body.outputs[index].kind;
  return body.TypeOf(body.outputs[index].name);
}

// Node output i mirrors body output i + `skip`; `scan_outputs_from` marks where per-iteration
// outputs (stacked into tensors) begin.
void InferFromBody(Graph& graph, const Node& node, const Graph& body, size_t skip, size_t scan_outputs_from) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Kind kind = Kind::kTensor;
    const DataType type = SubgraphOutputType(body, i + skip, &kind);
    SetOutput(graph, node, i, type, i >= scan_outputs_from ? Kind::kTensor : kind);
  }
}

void InferIf(Graph& graph, const Node& node) {
  for (const char* branch : {"then_branch", "else_branch"})
    if (node.HasAttribute(branch)) InferFromBody(graph, node, node.GetGraph(branch), 0, SIZE_MAX);
}

void InferLoop(Graph& graph, const Node& node) {
  if (!node.HasAttribute("body")) return;
  const size_t carried = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  InferFromBody(graph, node, node.GetGraph("body"), 1, carried);
}

void InferScan(Graph& graph, const Node& node) {
  if (node.HasAttribute("body")) InferFromBody(graph, node, node.GetGraph("body"), 0, SIZE_MAX);
}

void InferSequenceMap(Graph& graph, const Node& node) {
  if (!node.HasAttribute("body")) return;
  const Graph& body = node.GetGraph("body");
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Kind kind = Kind::kTensor;
    SetOutput(graph, node, i, SubgraphOutputType(body, i, &kind), Kind::kSequence);
  }
}

using Rule = void (*)(Graph&, const Node&);

// Rules for default-domain operators; anything else uses FirstTypedInput.
const std::unordered_map<std::string_view, Rule>& DefaultDomainRules() {
  static const std::unordered_map<std::string_view, Rule> rules = {
      {"Cast", InferCast}, {"CastLike", InferCastLike}, {"BitCast", InferCast},
      {"Shape", InferInt64}, {"Size", InferInt64}, {"NonZero", InferInt64}, {"ArgMax", InferInt64},
      {"ArgMin", InferInt64}, {"NonMaxSuppression", InferInt64}, {"SequenceLength", InferInt64},
      {"MatMulInteger", InferInt32}, {"ConvInteger", InferInt32},
      {"Equal", InferBool}, {"Less", InferBool}, {"Greater", InferBool}, {"LessOrEqual", InferBool},
      {"GreaterOrEqual", InferBool}, {"And", InferBool}, {"Or", InferBool}, {"Xor", InferBool}, {"Not", InferBool},
      {"IsNaN", InferBool}, {"IsInf", InferBool}, {"OptionalHasElement", InferBool}, {"RegexFullMatch", InferBool},
      {"StringNormalizer", InferString},
      {"Constant", InferConstant}, {"ConstantOfShape", InferConstantOfShape},
      {"EyeLike", InferDtypeAttribute}, {"RandomNormal", InferDtypeAttribute},
      {"RandomUniform", InferDtypeAttribute}, {"RandomNormalLike", InferDtypeAttribute},
      {"RandomUniformLike", InferDtypeAttribute}, {"Bernoulli", InferDtypeAttribute},
      {"HannWindow", InferOutputDatatype}, {"HammingWindow", InferOutputDatatype},
      {"BlackmanWindow", InferOutputDatatype}, {"MelWeightMatrix", InferOutputDatatype},
      {"Multinomial", InferMultinomial},
      {"TopK", InferWithIndices<1>}, {"MaxPool", InferWithIndices<1>}, {"Unique", InferUnique},
      {"Dropout", InferDropout}, {"Where", InferWhere}, {"OneHot", InferOneHot},
      {"QuantizeLinear", InferQuantizeLinear}, {"DequantizeLinear", InferDequantizeLinear},
      {"DynamicQuantizeLinear", InferDynamicQuantizeLinear},
      {"SequenceConstruct", InferToSequence}, {"SequenceInsert", InferToSequence},
      {"SequenceErase", InferToSequence}, {"SplitToSequence", InferToSequence},
      {"SequenceEmpty", InferSequenceEmpty}, {"SequenceAt", InferFromSequence},
      {"ConcatFromSequence", InferFromSequence},
      {"Optional", InferOptional}, {"OptionalGetElement", InferOptionalGetElement},
      {"If", InferIf}, {"Loop", InferLoop}, {"Scan", InferScan}, {"SequenceMap", InferSequenceMap},
  };
  return rules;
}

// Graph outputs the file left untyped take what inference found.
void UpdateGraphOutputs(Graph& graph) {
  for (ValueInfo& output : graph.outputs) {
    if (output.type != DataType::kUndefined) continue;
    const ValueInfo* info = graph.FindValueInfo(output.name);
    if (info && info->type != DataType::kUndefined) {
      output.type = info->type;
      output.kind = info->kind;
    } else {
      output.type = graph.TypeOf(output.name);
    }
  }
}

}  // namespace

void InferElementTypes(Graph& graph) {
  const auto& rules = DefaultDomainRules();
  for (const auto& node : graph.nodes) {
    for (auto& [key, attribute] : node->attributes) {
      if (attribute.g) InferElementTypes(*attribute.g);
      for (auto& subgraph : attribute.graphs) InferElementTypes(*subgraph);
    }
    auto rule = node->domain.empty() ? rules.find(node->op_type) : rules.end();
    if (rule != rules.end())
      rule->second(graph, *node);
    else if (node->domain == "com.microsoft" && node->op_type == "MatMulIntegerToFloat")
      InferLikeInput<2>(graph, *node);  // typed like a_scale
    else
      FirstTypedInput(graph, *node);
  }
  UpdateGraphOutputs(graph);
}

}  // namespace tessera
