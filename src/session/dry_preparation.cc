#include "session/dry_preparation.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tessera {
namespace {

// Default-domain operators whose output shapes follow from input shapes and attributes alone.
const std::set<std::string>& ShapeOnlyOps() {
  static const std::set<std::string> ops = {
      // element-wise and broadcasting
      "Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Gelu", "HardSigmoid", "HardSwish",
      "LeakyRelu", "Clip", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Floor", "Ceil", "Round", "Reciprocal",
      "Sign", "Identity", "Cast", "CastLike", "Not", "IsNaN", "IsInf", "PRelu", "Mish", "Sin", "Cos", "Add", "Sub",
      "Mul", "Pow", "Max", "Min", "Sum", "Mean", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And",
      "Or", "Xor", "Where", "Div",
      // windows, normalizations, products, layout
      "Conv", "ConvTranspose", "BatchNormalization", "InstanceNormalization", "LayerNormalization",
      "GroupNormalization", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
      "Softmax", "LogSoftmax", "LRN", "Flatten", "Transpose", "Concat", "Shape", "Size", "Gemm", "MatMul", "Dropout",
      "DepthToSpace", "SpaceToDepth", "ArgMax", "ArgMin", "Gather", "GatherElements", "CumSum", "Einsum",
      "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
      "ReduceLogSumExp",
      // shapes from the inputs listed in ShapeInputs (constants)
      "Reshape", "Expand", "Tile", "Slice", "Pad", "Resize", "Upsample", "Split", "Squeeze", "Unsqueeze", "TopK"};
  return ops;
}

// Tessera's and ONNX Runtime's contrib operators the optimizer writes or exporters carry, shapes from input shapes.
const std::set<std::string>& ShapeOnlyFusedOps() {
  static const std::set<std::string> ops = {
      "FusedConv", "FusedConvTranspose", "NchwcConv", "ActivatedNchwcConv", "NchwcMaxPool", "NchwcAveragePool", "NchwcGlobalAveragePool",
      "NchwcGlobalMaxPool", "ReorderFromBlocked", "FusedMatMul", "SkipLayerNormalization",
      "MatMulSkipLayerNormalization", "QuickGelu", "FastGelu", "BiasGelu", "Gelu"};
  return ops;
}

// Inputs that carry shapes, sizes, axes or counts (by index), which must be constants.
const std::map<std::string, std::vector<size_t>>& ShapeInputs() {
  static const std::map<std::string, std::vector<size_t>> inputs = {
      {"Reshape", {1}}, {"Expand", {1}},    {"Tile", {1}},      {"Slice", {1, 2, 3, 4}}, {"Pad", {1, 2, 3}},
      {"Resize", {1, 2, 3}}, {"Upsample", {1}}, {"Split", {1}}, {"Squeeze", {1}},       {"Unsqueeze", {1}},
      {"TopK", {1}},    {"ReduceMean", {1}}, {"ReduceSum", {1}}, {"ReduceMax", {1}},     {"ReduceMin", {1}},
      {"ReduceProd", {1}}, {"ReduceL1", {1}}, {"ReduceL2", {1}}, {"ReduceSumSquare", {1}}, {"ReduceLogSumExp", {1}}};
  return inputs;
}

bool IsFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

bool Allowed(const Graph& graph, const Node& node) {
  for (const auto& [name, attribute] : node.attributes)
    if (attribute.g || !attribute.graphs.empty()) return false;  // control flow
  if (!node.domain.empty() && node.domain != "ai.onnx")
    return (node.domain == "ai.tessera" || node.domain == "com.microsoft") && ShapeOnlyFusedOps().count(node.op_type);
  if (!ShapeOnlyOps().count(node.op_type)) return false;
  if (node.op_type == "Div" && !IsFloatType(graph.TypeOf(node.outputs[0]))) return false;
  const auto shape_inputs = ShapeInputs().find(node.op_type);
  if (shape_inputs == ShapeInputs().end()) return true;
  for (size_t i : shape_inputs->second)
    if (node.HasInput(i) && !graph.initializers.count(node.inputs[i])) return false;
  return true;
}

}  // namespace

bool AllowsDryPreparation(const Graph& graph) {
  for (const auto& node : graph.nodes)
    if (!Allowed(graph, *node)) return false;
  return true;
}

}  // namespace tessera
