#include "graph/passes/constant_folding.h"

#include <set>
#include <string>

namespace tessera {

namespace {

// Whether `graph` computes or receives `value` itself (a graph input or a node output).
bool DefinesOwnValue(const Graph& graph, const std::string& value) {
  for (const ValueInfo& input : graph.inputs)
    if (input.name == value) return true;
  for (const auto& node : graph.nodes)
    for (const std::string& output : node->outputs)
      if (output == value) return true;
  return false;
}

bool IsFoldable(const Node& node, const Graph& graph) {
  if (node.domain != "" || IsNondeterministicOp(node)) return false;
  for (const auto& [name, attribute] : node.attributes)
    if (attribute.type == Attribute::Type::kGraph || attribute.type == Attribute::Type::kGraphs) return false;
  for (const std::string& in : node.inputs)
    if (!in.empty() && FindConstant(graph, in) == nullptr) return false;
  for (const std::string& out : node.outputs)
    if (out.empty()) return false;
  return true;
}

}  // namespace

bool IsNondeterministicOp(const Node& node) {
  static const std::set<std::string> kNonDeterministic = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"};
  return node.domain.empty() && kNonDeterministic.count(node.op_type) != 0;
}

const Tensor* FindConstant(const Graph& graph, const std::string& value) {
  for (const Graph* g = &graph; g != nullptr; g = g->parent) {
    auto it = g->initializers.find(value);
    if (it != g->initializers.end()) return &it->second;
    if (g->parent == nullptr || DefinesOwnValue(*g, value)) return nullptr;
  }
  return nullptr;
}

size_t FoldConstants(Graph& graph, const ConstantEvaluator& evaluator) {
  // Nodes stay in place until the end: FindConstant looks at the graph's nodes while this runs.
  std::vector<bool> folded(graph.nodes.size(), false);
  size_t count = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = *graph.nodes[i];
    if (!IsFoldable(node, graph) || !evaluator.can_evaluate(node, graph)) continue;
    std::vector<Value> outputs = evaluator.evaluate(node, graph);
    bool all_tensors = outputs.size() == node.outputs.size();
    for (const Value& v : outputs) all_tensors = all_tensors && v.is_tensor();
    if (!all_tensors) continue;
    for (size_t j = 0; j < outputs.size(); ++j) {
      graph.initializers[node.outputs[j]] = outputs[j].tensor();
      ValueInfo& info = graph.value_infos[node.outputs[j]];
      info.name = node.outputs[j];
      info.type = outputs[j].tensor().type();
    }
    folded[i] = true;
    ++count;
  }
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!folded[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
  return count;
}

}  // namespace tessera
