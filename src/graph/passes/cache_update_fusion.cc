#include "graph/passes/cache_update_fusion.h"

#include <set>

namespace tessera {

namespace {

// The axis of a rank-4 operand that holds canonical axis `canonical` per the Attention's `attribute` (the identity
// map, or the key's default (0, 1, 3, 2), when absent).
int64_t OperandAxis(const Node& attention, const char* attribute, int64_t canonical) {
  if (attention.HasAttribute(attribute)) {
    const std::vector<int64_t> axes = attention.GetInts(attribute);
    return axes.size() == 4 ? axes[canonical] : -1;
  }
  const bool key = std::string(attribute) == "k_axes";
  return key && canonical >= 2 ? 5 - canonical : canonical;
}

}  // namespace

size_t FuseCacheUpdates(Graph& graph, const CanFuse& can_fuse) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  size_t fused = 0;
  for (const auto& owned : graph.nodes) {
    Node& attention = *owned;
    if (attention.op_type != "Attention" || attention.domain != "ai.tessera" || attention.inputs.size() > 4 ||
        attention.inputs.size() < 3)
      continue;
    struct Write {
      Node* scatter = nullptr;
    } writes[2];
    for (int operand = 0; operand < 2; ++operand) {
      const std::string& value = attention.inputs[1 + operand];
      Node* scatter = index.Producer(value);
      if (!IsStandardOp(scatter, "ScatterElements") || scatter->inputs.size() != 3 || doomed.count(scatter) != 0)
        continue;
      if (scatter->GetString("reduction", "none") != "none") continue;
      const int64_t axis = scatter->GetInt("axis", 0);
      const int64_t sequence = OperandAxis(attention, operand == 0 ? "k_axes" : "v_axes", 2);
      if (axis < -4 || axis > 3 || (axis + 4) % 4 != sequence) continue;
      // Read by this Attention alone, once (a graph output may also be it: the updated cache).
      const std::vector<Node*>& readers = index.Consumers(value);
      if (readers.size() != 1 || readers[0] != &attention || index.ReadBySubgraph(value)) continue;
      // The EPs of both the scatter and the attention take the cache-update form (8 inputs).
      if (!can_fuse(*scatter, graph, "Attention", "ai.tessera", 8) || !can_fuse(attention, graph, "Attention", "ai.tessera", 8))
        continue;
      writes[operand].scatter = scatter;
    }
    if (writes[0].scatter == nullptr && writes[1].scatter == nullptr) continue;
    attention.inputs.resize(8);
    attention.outputs.resize(3);
    for (int operand = 0; operand < 2; ++operand) {
      Node* scatter = writes[operand].scatter;
      if (scatter == nullptr) continue;
      attention.inputs[1 + operand] = scatter->inputs[0];
      attention.inputs[4 + 2 * operand] = scatter->inputs[1];
      attention.inputs[5 + 2 * operand] = scatter->inputs[2];
      attention.outputs[1 + operand] = scatter->outputs[0];
      doomed.insert(scatter);
      ++fused;
    }
  }
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
