#include "graph/passes/layer_norm_fusion.h"

namespace tessera {
namespace {

// The ReduceMean's axes (attribute before opset 18, constant input from 18), or nullopt.
std::optional<std::vector<int64_t>> ReduceAxes(const Graph& graph, const Node& node) {
  if (node.HasInput(1)) {
    const Tensor* axes = ConstantTensor(graph, node.inputs[1]);
    if (axes == nullptr || axes->type() != DataType::kInt64) return std::nullopt;
    return std::vector<int64_t>(axes->Span<int64_t>().begin(), axes->Span<int64_t>().end());
  }
  if (!node.HasAttribute("axes")) return std::nullopt;
  return node.GetInts("axes");
}

// A mean over the last axis of its input, keeping dims.
bool IsLastAxisMean(const Graph& graph, const Node& node) {
  if (node.op_type != "ReduceMean" || node.domain != "" || node.GetInt("keepdims", 1) != 1) return false;
  const std::optional<std::vector<int64_t>> axes = ReduceAxes(graph, node);
  if (!axes || axes->size() != 1) return false;
  if ((*axes)[0] == -1) return true;
  const ValueInfo* info = graph.FindValueInfo(node.inputs[0]);
  return info != nullptr && info->shape && (*axes)[0] == static_cast<int64_t>(info->shape->size()) - 1;
}

bool Is(const Node* node, const char* op_type) {
  return node != nullptr && node->op_type == op_type && node->domain == "";
}

// The single reader of `value` when it is `op_type` and the value is read by nothing else.
Node* SoleReader(const GraphIndex& index, const std::string& value, const char* op_type) {
  Node* reader = index.SoleReader(value);
  return Is(reader, op_type) ? reader : nullptr;
}

// A float vector of one value per feature (the last axis). A single value is rejected: Mul/Add would
// broadcast it, LayerNormalization's scale and bias must match the normalized axis.
bool IsPerFeatureConstant(const Graph& graph, const std::string& value) {
  const Tensor* tensor = ConstantTensor(graph, value);
  return tensor != nullptr && tensor->type() == DataType::kFloat && tensor->shape().rank() == 1 &&
         tensor->NumElements() > 1;
}

struct LayerNormMatch {
  std::vector<Node*> nodes;  // the pattern in order; the last one is rewritten
  std::string x, scale, bias;
  float epsilon = 0;
};

// Matches the pattern starting at the first ReduceMean.
std::optional<LayerNormMatch> Match(const Graph& graph, const GraphIndex& index, Node& mean) {
  if (!IsLastAxisMean(graph, mean) || graph.TypeOf(mean.inputs[0]) != DataType::kFloat) return std::nullopt;
  const std::string& x = mean.inputs[0];
  Node* sub = SoleReader(index, mean.outputs[0], "Sub");
  if (sub == nullptr || sub->inputs[0] != x || sub->inputs[1] != mean.outputs[0]) return std::nullopt;
  // d = x - mean feeds Pow (variance) and Div (normalization).
  const std::vector<Node*>& d_readers = index.Consumers(sub->outputs[0]);
  if (d_readers.size() != 2 || graph.IsGraphOutput(sub->outputs[0]) || index.ReadBySubgraph(sub->outputs[0]))
    return std::nullopt;
  Node* pow = Is(d_readers[0], "Pow") ? d_readers[0] : d_readers[1];
  Node* div = Is(d_readers[0], "Div") ? d_readers[0] : d_readers[1];
  if (!Is(pow, "Pow") || !Is(div, "Div") || pow->inputs[0] != sub->outputs[0] ||
      !IsScalarConstant(graph, pow->inputs[1], 2.0) || div->inputs[0] != sub->outputs[0])
    return std::nullopt;
  Node* variance = SoleReader(index, pow->outputs[0], "ReduceMean");
  // Pow(d, 2) has x's rank, so the variance reduces the last axis when it reduces the same axes as the mean.
  if (variance == nullptr || variance->GetInt("keepdims", 1) != 1 ||
      ReduceAxes(graph, *variance) != ReduceAxes(graph, mean))
    return std::nullopt;
  Node* add_eps = SoleReader(index, variance->outputs[0], "Add");
  if (add_eps == nullptr) return std::nullopt;
  const size_t eps_index = add_eps->inputs[0] == variance->outputs[0] ? 1 : 0;
  const std::optional<double> epsilon = ScalarConstant(graph, add_eps->inputs[eps_index]);
  Node* sqrt = SoleReader(index, add_eps->outputs[0], "Sqrt");
  if (!epsilon || sqrt == nullptr || div->inputs[1] != sqrt->outputs[0] || !index.OnlyReadBy(sqrt->outputs[0], *div))
    return std::nullopt;
  Node* mul = SoleReader(index, div->outputs[0], "Mul");
  if (mul == nullptr) return std::nullopt;
  LayerNormMatch match{{&mean, sub, pow, variance, add_eps, sqrt, div, mul}, x, "", "", static_cast<float>(*epsilon)};
  match.scale = mul->inputs[0] == div->outputs[0] ? mul->inputs[1] : mul->inputs[0];
  if (!IsPerFeatureConstant(graph, match.scale)) return std::nullopt;
  Node* add_bias = SoleReader(index, mul->outputs[0], "Add");
  if (add_bias != nullptr) {
    const std::string& bias = add_bias->inputs[0] == mul->outputs[0] ? add_bias->inputs[1] : add_bias->inputs[0];
    if (IsPerFeatureConstant(graph, bias)) {
      match.bias = bias;
      match.nodes.push_back(add_bias);
    }
  }
  return match;
}

// Rewrites the match's last node into the LayerNormalization and marks the others for removal.
void Rewrite(const LayerNormMatch& match, std::set<const Node*>& doomed) {
  Node& fused = *match.nodes.back();
  const int opset = FusedOpset(*match.nodes.front(), 17);
  const std::string output = fused.outputs[0];
  const std::string name = fused.name;
  fused = Node();
  fused.name = name + "_layer_norm";
  fused.op_type = "LayerNormalization";
  fused.opset = opset;
  fused.inputs = {match.x, match.scale};
  if (!match.bias.empty()) fused.inputs.push_back(match.bias);
  fused.outputs = {output};
  fused.attributes["axis"] = IntAttribute("axis", -1);
  fused.attributes["epsilon"] = FloatAttribute("epsilon", match.epsilon);
  for (size_t i = 0; i + 1 < match.nodes.size(); ++i) doomed.insert(match.nodes[i]);
}

}  // namespace

size_t FuseLayerNorm(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    if (doomed.count(node.get())) continue;
    std::optional<LayerNormMatch> match = Match(graph, index, *node);
    if (!match || !can_fuse(*node, graph, "LayerNormalization", "", 0)) continue;
    Rewrite(*match, doomed);
    ++fused;
  }
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
