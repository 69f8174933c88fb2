#include "graph/passes/cast_elimination.h"

#include "graph/passes/graph_rewrite.h"

namespace tessera {

size_t EliminateNoOpCasts(Graph& graph) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t changes = 0;
  for (const auto& node : graph.nodes) {
    Node& cast = *node;
    if (!IsStandardOp(&cast, "Cast") || cast.inputs.size() != 1 || cast.inputs[0].empty() || !cast.HasAttribute("to"))
      continue;
    const DataType from = graph.TypeOf(cast.inputs[0]);
    if (from == DataType::kUndefined || static_cast<int64_t>(from) != cast.GetInt("to")) continue;
    const std::string& output = cast.outputs[0];
    if (graph.IsGraphOutput(output) || index.ReadBySubgraph(output)) {
      cast.op_type = "Identity";
      cast.attributes.clear();
    } else {
      RenameReads(graph, output, cast.inputs[0]);
      doomed.insert(&cast);
    }
    ++changes;
  }
  RemoveNodes(graph, doomed);
  return changes;
}

}  // namespace tessera
