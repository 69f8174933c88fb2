#include "graph/passes/dead_node_elimination.h"

#include <set>

namespace tessera {

size_t EliminateDeadNodes(Graph& graph) {
  std::set<std::string> live;
  for (const ValueInfo& out : graph.outputs) live.insert(out.name);
  std::vector<bool> keep(graph.nodes.size(), false);
  // Nodes are topologically sorted: one backward sweep marks everything that feeds a live value.
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& node = *graph.nodes[i];
    bool needed = false;
    for (const std::string& out : node.outputs) needed = needed || (!out.empty() && live.count(out));
    if (!needed) continue;
    keep[i] = true;
    for (const std::string& in : node.inputs)
      if (!in.empty()) live.insert(in);
    for (const auto& [name, attribute] : node.attributes) {
      if (attribute.g) live.merge(attribute.g->OuterScopeReferences());
      for (const auto& g : attribute.graphs) live.merge(g->OuterScopeReferences());
    }
  }
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(graph.nodes[i]));
  const size_t removed = graph.nodes.size() - kept.size();
  graph.nodes = std::move(kept);
  for (auto it = graph.initializers.begin(); it != graph.initializers.end();)
    it = live.count(it->first) ? std::next(it) : graph.initializers.erase(it);
  return removed;
}

}  // namespace tessera
