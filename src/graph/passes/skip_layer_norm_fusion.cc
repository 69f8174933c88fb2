#include "graph/passes/skip_layer_norm_fusion.h"

namespace tessera {
namespace {

bool IsTwoInputAdd(const Node* node) {
  return node != nullptr && node->op_type == "Add" && node->domain.empty() && node->inputs.size() == 2 &&
         node->outputs.size() == 1 && !node->inputs[0].empty() && !node->inputs[1].empty();
}

// The last dimension of `value` when its shape is known and concrete, else -1.
int64_t KnownHiddenSize(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || !info->shape || info->shape->empty()) return -1;
  return info->shape->back().is_concrete() ? info->shape->back().value : -1;
}

// The number of elements of `value` when it is a vector (rank 1) of known length, else -1.
int64_t VectorLength(const Graph& graph, const std::string& value) {
  if (const Tensor* constant = ConstantTensor(graph, value))
    return constant->shape().rank() == 1 ? constant->shape()[0] : -1;
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || !info->shape || info->shape->size() != 1 || !info->shape->front().is_concrete()) return -1;
  return info->shape->front().value;
}

// A vector of `type` with one value per feature. A single value could stand for a broadcast that the fused
// kernel does not do, so it is accepted only when the hidden size is known to be 1.
bool IsFeatureVector(const Graph& graph, const std::string& value, DataType type, int64_t hidden) {
  const int64_t length = VectorLength(graph, value);
  if (graph.TypeOf(value) != type || length < 1) return false;
  return hidden >= 0 ? length == hidden : length > 1;
}

bool NormalizesLastAxis(const Graph& graph, const Node& layer_norm) {
  const int64_t axis = layer_norm.GetInt("axis", -1);
  if (axis == -1) return true;
  const ValueInfo* info = graph.FindValueInfo(layer_norm.inputs[0]);
  return info != nullptr && info->shape && axis == static_cast<int64_t>(info->shape->size()) - 1;
}

bool NamesStatistics(const Node& layer_norm) {
  for (size_t i = 1; i < layer_norm.outputs.size(); ++i)
    if (!layer_norm.outputs[i].empty()) return true;
  return false;
}

struct SkipLayerNormMatch {
  Node* add = nullptr;              // rewritten into the fused node
  Node* layer_norm = nullptr;
  Node* bias_add = nullptr;         // the absorbed Add(input, bias), if any
  std::string input, skip, bias;
  bool keep_sum = false;            // the sum has readers besides the LayerNormalization
};

// Looks for Add(input, bias) among the residual Add's operands and absorbs it when only that Add reads it.
void AbsorbBias(const Graph& graph, const GraphIndex& index, SkipLayerNormMatch& match, DataType type,
                int64_t hidden) {
  for (size_t k = 0; k < 2; ++k) {
    Node* inner = index.Producer(match.add->inputs[k]);
    if (!IsTwoInputAdd(inner) || !index.OnlyReadBy(inner->outputs[0], *match.add)) continue;
    for (size_t b = 0; b < 2; ++b) {
      const std::string& bias = inner->inputs[b];
      if (ConstantTensor(graph, bias) == nullptr || !IsFeatureVector(graph, bias, type, hidden)) continue;
      match.bias_add = inner;
      match.input = inner->inputs[1 - b];
      match.bias = bias;
      match.skip = match.add->inputs[1 - k];
      return;
    }
  }
}

// Whether `value` is defined before the node at `position` runs (the fused node takes the Add's place).
bool DefinedBefore(const GraphIndex& index, const std::map<const Node*, size_t>& positions, const std::string& value,
                   size_t position) {
  if (value.empty()) return true;
  const Node* producer = index.Producer(value);
  return producer == nullptr || positions.at(producer) < position;
}

std::optional<SkipLayerNormMatch> Match(const Graph& graph, const GraphIndex& index,
                                        const std::map<const Node*, size_t>& positions, Node& layer_norm) {
  if (layer_norm.op_type != "LayerNormalization" || !layer_norm.domain.empty() || !layer_norm.HasInput(0) ||
      !layer_norm.HasInput(1) || NamesStatistics(layer_norm) || !NormalizesLastAxis(graph, layer_norm))
    return std::nullopt;
  const std::string& sum = layer_norm.inputs[0];
  const DataType type = graph.TypeOf(sum);
  Node* add = index.Producer(sum);
  if ((type != DataType::kFloat && type != DataType::kFloat16) || !IsTwoInputAdd(add)) return std::nullopt;
  const int64_t hidden = KnownHiddenSize(graph, sum);
  const std::string beta = layer_norm.HasInput(2) ? layer_norm.inputs[2] : std::string();
  if (!IsFeatureVector(graph, layer_norm.inputs[1], type, hidden) ||
      (!beta.empty() && !IsFeatureVector(graph, beta, type, hidden)))
    return std::nullopt;
  const size_t position = positions.at(add);
  if (!DefinedBefore(index, positions, layer_norm.inputs[1], position) ||
      !DefinedBefore(index, positions, beta, position))
    return std::nullopt;
  SkipLayerNormMatch match{add, &layer_norm, nullptr, add->inputs[0], add->inputs[1], "", false};
  AbsorbBias(graph, index, match, type, hidden);
  match.keep_sum = !index.OnlyReadBy(sum, layer_norm);
  return match;
}

Node MakeFusedNode(const SkipLayerNormMatch& match) {
  const Node& layer_norm = *match.layer_norm;
  Node fused;
  fused.name = layer_norm.name + "_skip";
  fused.op_type = "SkipLayerNormalization";
  fused.domain = "ai.tessera";
  fused.opset = 1;
  fused.inputs = {match.input, match.skip, layer_norm.inputs[1], layer_norm.HasInput(2) ? layer_norm.inputs[2] : "",
                  match.bias};
  while (fused.inputs.back().empty()) fused.inputs.pop_back();
  fused.outputs = {layer_norm.outputs[0]};
  if (match.keep_sum) fused.outputs.insert(fused.outputs.end(), {"", "", match.add->outputs[0]});
  fused.attributes["epsilon"] = FloatAttribute("epsilon", layer_norm.GetFloat("epsilon", 1e-5f));
  return fused;
}

bool RunsWithFusedKernel(const SkipLayerNormMatch& match, const Graph& graph, const CanFuse& can_fuse) {
  for (const Node* node : {match.add, match.layer_norm, match.bias_add})
    if (node != nullptr && !can_fuse(*node, graph, "SkipLayerNormalization", "ai.tessera", 0)) return false;
  return true;
}

}  // namespace

size_t FuseSkipLayerNorm(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::map<const Node*, size_t> positions;
  for (size_t i = 0; i < graph.nodes.size(); ++i) positions[graph.nodes[i].get()] = i;
  std::set<const Node*> doomed, claimed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    if (claimed.count(node.get())) continue;
    std::optional<SkipLayerNormMatch> match = Match(graph, index, positions, *node);
    if (!match || claimed.count(match->add) || (match->bias_add && claimed.count(match->bias_add)) ||
        !RunsWithFusedKernel(*match, graph, can_fuse))
      continue;
    claimed.insert({match->add, match->layer_norm});
    if (!match->keep_sum) graph.value_infos.erase(match->add->outputs[0]);
    if (match->bias_add) {
      graph.value_infos.erase(match->bias_add->outputs[0]);
      claimed.insert(match->bias_add);
      doomed.insert(match->bias_add);
    }
    doomed.insert(match->layer_norm);
    *match->add = MakeFusedNode(*match);
    ++fused;
  }
  if (fused > 0) graph.opsets.emplace("ai.tessera", 1);
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
