#include "graph/passes/constant_folding.h"

#include <set>
#include <string>

namespace tessera {

namespace {

bool IsFoldable(const Node& node, const Graph& graph) {
  static const std::set<std::string> kNonDeterministic = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"};
  if (node.domain != "" || kNonDeterministic.count(node.op_type)) return false;
  for (const auto& [name, attribute] : node.attributes)
    if (attribute.type == Attribute::Type::kGraph || attribute.type == Attribute::Type::kGraphs) return false;
  for (const std::string& in : node.inputs)
    if (!in.empty() && !graph.IsInitializer(in)) return false;
  for (const std::string& out : node.outputs)
    if (out.empty()) return false;
  return true;
}

}  // namespace

size_t FoldConstants(Graph& graph, const ConstantEvaluator& evaluator) {
  size_t folded = 0;
  std::vector<std::unique_ptr<Node>> kept;
  for (auto& node : graph.nodes) {
    if (!IsFoldable(*node, graph) || !evaluator.can_evaluate(*node, graph)) {
      kept.push_back(std::move(node));
      continue;
    }
    std::vector<Value> outputs = evaluator.evaluate(*node, graph);
    bool all_tensors = outputs.size() == node->outputs.size();
    for (const Value& v : outputs) all_tensors = all_tensors && v.is_tensor();
    if (!all_tensors) {
      kept.push_back(std::move(node));
      continue;
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      graph.initializers[node->outputs[i]] = outputs[i].tensor();
      ValueInfo& info = graph.value_infos[node->outputs[i]];
      info.name = node->outputs[i];
      info.type = outputs[i].tensor().type();
    }
    ++folded;
  }
  graph.nodes = std::move(kept);
  return folded;
}

}  // namespace tessera
