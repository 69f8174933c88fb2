#include "graph/passes/transpose_elimination.h"

#include "graph/passes/graph_rewrite.h"

namespace tessera {
namespace {

bool IsTransposeWithPerm(const Node* node) {
  return node != nullptr && node->op_type == "Transpose" && node->domain == "" && node->HasAttribute("perm") &&
         node->outputs.size() == 1 && !node->outputs[0].empty();
}

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// p1 then p2 as one permutation, or nullopt when the ranks differ or an entry is out of range.
std::optional<std::vector<int64_t>> Compose(const std::vector<int64_t>& p1, const std::vector<int64_t>& p2) {
  if (p1.size() != p2.size()) return std::nullopt;
  std::vector<int64_t> composed(p2.size());
  for (size_t i = 0; i < p2.size(); ++i) {
    if (p2[i] < 0 || p2[i] >= static_cast<int64_t>(p1.size())) return std::nullopt;
    composed[i] = p1[p2[i]];
  }
  return composed;
}

// Whether `perm` keeps the order of the axes longer than 1 (it only moves axes of size 1): the elements then stay
// where they are in memory and the Transpose is a Reshape.
bool MovesOnlyUnitAxes(const std::vector<int64_t>& perm, const std::vector<int64_t>& dims) {
  if (perm.size() != dims.size()) return false;
  std::vector<bool> seen(perm.size(), false);  // an invalid perm stays a Transpose, whose kernel reports it
  int64_t last = -1;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= static_cast<int64_t>(dims.size()) || seen[axis] || dims[axis] == 0) return false;
    seen[axis] = true;
    if (dims[axis] == 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

// Rewrites `transpose` as Reshape(x, output dims) (a view, no copy on EPs that alias reshapes).
void ToReshape(Graph& graph, Node& transpose, const std::vector<int64_t>& perm, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = dims[perm[i]];
  const std::string shape = FreshValueName(graph, transpose.outputs[0] + "_shape");
  graph.initializers[shape] = Tensor::FromVector<int64_t>(Shape{static_cast<int64_t>(out.size())}, out);
  transpose.op_type = "Reshape";
  transpose.attributes.clear();
  transpose.inputs = {transpose.inputs[0], shape};
}

// Drops `transpose` (whose perm is the identity) by pointing its readers at its input.
void Bypass(Graph& graph, const GraphIndex& index, Node& transpose, std::set<const Node*>& doomed) {
  const std::string& output = transpose.outputs[0];
  if (graph.IsGraphOutput(output) || index.ReadBySubgraph(output)) {
    transpose.op_type = "Identity";
    transpose.attributes.clear();
    return;
  }
  RenameReads(graph, output, transpose.inputs[0]);
  doomed.insert(&transpose);
}

// One sweep; a node touched in this sweep is not matched again until the next (the index is stale for it).
size_t Sweep(Graph& graph) {
  GraphIndex index(graph);
  std::set<const Node*> doomed, touched;
  size_t changes = 0;
  for (const auto& node : graph.nodes) {
    Node& second = *node;
    if (!IsTransposeWithPerm(&second) || touched.count(&second)) continue;
    Node* first = index.Producer(second.inputs[0]);
    std::vector<int64_t> perm = second.GetInts("perm");
    if (IsTransposeWithPerm(first) && !touched.count(first) && index.OnlyReadBy(first->outputs[0], second)) {
      std::optional<std::vector<int64_t>> composed = Compose(first->GetInts("perm"), perm);
      if (!composed) continue;
      second.inputs[0] = first->inputs[0];
      second.attributes["perm"] = IntsAttribute("perm", *composed);
      doomed.insert(first);
      touched.insert({first, &second});
      perm = *composed;
      ++changes;
    }
    if (IsIdentity(perm)) {
      Bypass(graph, index, second, doomed);
      touched.insert(&second);
      ++changes;
    } else if (second.opset >= 5) {  // Reshape with a shape input exists from opset 5
      const std::optional<std::vector<int64_t>> dims = StaticDims(graph, second.inputs[0]);
      if (dims && MovesOnlyUnitAxes(perm, *dims)) {
        ToReshape(graph, second, perm, *dims);
        touched.insert(&second);
        ++changes;
      }
    }
  }
  RemoveNodes(graph, doomed);
  return changes;
}

}  // namespace

size_t EliminateTransposes(Graph& graph) {
  size_t total = 0;
  while (size_t changes = Sweep(graph)) total += changes;
  return total;
}

}  // namespace tessera
