#include "graph/passes/silu_fusion.h"

namespace tessera {

size_t FuseSilu(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    Node& mul = *node;
    if (!IsStandardOp(&mul, "Mul") || mul.inputs.size() != 2 || mul.inputs[0] == mul.inputs[1]) continue;
    for (size_t gate_index : {0, 1}) {
      Node* sigmoid = index.Producer(mul.inputs[gate_index]);
      const std::string& value = mul.inputs[1 - gate_index];
      if (!IsStandardOp(sigmoid, "Sigmoid") || sigmoid->inputs.size() != 1 || sigmoid->inputs[0] != value ||
          !index.OnlyReadBy(sigmoid->outputs[0], mul))
        continue;
      const DataType type = graph.TypeOf(value);
      if (type != DataType::kFloat && type != DataType::kFloat16) break;
      if (AnyClaimed({sigmoid, &mul}, doomed) || !can_fuse(mul, graph, "QuickGelu", "com.microsoft", 0)) break;
      Node& quick = CollapseMatch({sigmoid, &mul}, "QuickGelu", 1, {value}, "_silu", doomed);
      quick.domain = "com.microsoft";
      quick.attributes["alpha"] = FloatAttribute("alpha", 1.0f);
      ++fused;
      break;
    }
  }
  RemoveNodes(graph, doomed);
  if (fused > 0) graph.opsets.emplace("com.microsoft", 1);
  return fused;
}

}  // namespace tessera
