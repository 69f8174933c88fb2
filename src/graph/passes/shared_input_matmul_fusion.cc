#include "graph/passes/shared_input_matmul_fusion.h"

#include <cstring>
#include <memory>

namespace tessera {

namespace {

bool SameAttribute(const Attribute& a, const Attribute& b) {
  return a.type == b.type && a.f == b.f && a.i == b.i && a.s == b.s && a.floats == b.floats && a.ints == b.ints;
}

bool SameAttributes(const Node& a, const Node& b) {
  if (a.attributes.size() != b.attributes.size()) return false;
  for (const auto& [name, attribute] : a.attributes) {
    auto it = b.attributes.find(name);
    if (it == b.attributes.end() || !SameAttribute(attribute, it->second)) return false;
  }
  return true;
}

// A product this pass may merge: MatMul(x, B) or FusedMatMul(x, B, bias?) without an addend, B a 2-D float or
// float16 constant, bias a 1-D constant of B's width.
bool Mergeable(const Graph& graph, const Node& node) {
  const bool matmul = node.op_type == "MatMul" && node.domain.empty();
  const bool fused = node.op_type == "FusedMatMul" && node.domain == "ai.tessera";
  if ((!matmul && !fused) || node.outputs.size() != 1 || node.inputs.size() < 2) return false;
  if (matmul && node.inputs.size() != 2) return false;
  if (fused && node.inputs.size() > 3) return false;  // an addend
  const Tensor* b = ConstantTensor(graph, node.inputs[1]);
  if (b == nullptr || b->shape().rank() != 2 || (b->type() != DataType::kFloat && b->type() != DataType::kFloat16))
    return false;
  if (node.inputs.size() == 3 && !node.inputs[2].empty()) {
    const Tensor* bias = ConstantTensor(graph, node.inputs[2]);
    if (bias == nullptr || bias->type() != b->type() || bias->shape().rank() != 1 || bias->shape()[0] != b->shape()[1])
      return false;
  }
  return true;
}

bool HasBias(const Node& node) { return node.inputs.size() == 3 && !node.inputs[2].empty(); }

// Whether `b` can join a group started by `a` (same input, kind, attributes, weight type and rows, bias or not).
bool Compatible(const Graph& graph, const Node& a, const Node& b) {
  const Tensor& wa = *ConstantTensor(graph, a.inputs[1]);
  const Tensor& wb = *ConstantTensor(graph, b.inputs[1]);
  return a.op_type == b.op_type && a.domain == b.domain && HasBias(a) == HasBias(b) && SameAttributes(a, b) &&
         wa.type() == wb.type() && wa.shape()[0] == wb.shape()[0];
}

// [B_1 | ... | B_n] of row-major tensors with equal row counts: 2-D [rows, columns_i], or 1-D (one row).
Tensor ConcatColumns(const std::vector<const Tensor*>& parts) {
  const bool rows_given = parts[0]->shape().rank() == 2;
  const int64_t rows = rows_given ? parts[0]->shape()[0] : 1;
  const size_t element = SizeOf(parts[0]->type());
  int64_t columns = 0;
  for (const Tensor* p : parts) columns += p->NumElements() / rows;
  Tensor out = Tensor::Allocate(parts[0]->type(), rows_given ? Shape{rows, columns} : Shape{columns});
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t r = 0; r < rows; ++r)
    for (const Tensor* p : parts) {
      const size_t bytes = static_cast<size_t>(p->NumElements() / rows) * element;
      std::memcpy(dst, static_cast<const char*>(p->raw_data()) + static_cast<size_t>(r) * bytes, bytes);
      dst += bytes;
    }
  return out;
}

}  // namespace

size_t FuseSharedInputMatMuls(Graph& graph, const CanFuse& can_fuse) {
  // Groups of compatible products per input, in graph order.
  std::map<std::string, std::vector<std::vector<Node*>>> groups;
  for (const auto& node : graph.nodes) {
    if (!Mergeable(graph, *node)) continue;
    std::vector<std::vector<Node*>>& of_input = groups[node->inputs[0]];
    bool placed = false;
    for (std::vector<Node*>& group : of_input)
      if (!placed && Compatible(graph, *group.front(), *node)) {
        group.push_back(node.get());
        placed = true;
      }
    if (!placed) of_input.push_back({node.get()});
  }
  std::set<const Node*> doomed;
  std::set<std::string> separate;  // the merged products' own weights and biases
  std::vector<std::pair<const Node*, Node>> splits;  // (merged product, the Split to insert after it)
  NewValues fresh(graph);
  size_t merged = 0;
  const int default_opset = graph.opsets.count("") ? graph.opsets.at("") : 0;
  for (auto& [input, of_input] : groups)
    for (std::vector<Node*>& group : of_input) {
      if (group.size() < 2) continue;
      Node& first = *group.front();
      const bool fused = first.op_type == "FusedMatMul";
      if (!can_fuse(first, graph, fused ? "FusedMatMul" : "MatMul", fused ? "ai.tessera" : "", 0) ||
          !can_fuse(first, graph, "Split", "", 0))
        continue;
      std::vector<const Tensor*> weights, biases;
      std::vector<int64_t> widths;
      for (const Node* n : group) {
        weights.push_back(ConstantTensor(graph, n->inputs[1]));
        widths.push_back(weights.back()->shape()[1]);
        separate.insert(n->inputs[1]);
        if (HasBias(*n)) {
          biases.push_back(ConstantTensor(graph, n->inputs[2]));
          separate.insert(n->inputs[2]);
        }
      }
      const std::string weight_name = fresh.Fresh(first.inputs[1] + "_merged");
      graph.initializers[weight_name] = ConcatColumns(weights);
      std::string bias_name;
      if (!biases.empty()) {
        bias_name = fresh.Fresh(first.inputs[2] + "_merged");
        graph.initializers[bias_name] = ConcatColumns(biases);
      }
      Node split;
      split.name = first.name + "_split";
      split.op_type = "Split";
      split.opset = default_opset;
      const std::string product = fresh.Fresh(first.outputs[0] + "_merged");
      split.inputs = {product};
      if (default_opset >= 13) split.inputs.push_back(fresh.Int64s(first.name + "_split_sizes", widths));
      else split.attributes["split"] = IntsAttribute("split", widths);
      split.attributes["axis"] = IntAttribute("axis", -1);
      for (const Node* n : group) split.outputs.push_back(n->outputs[0]);
      first.name += "_merged";
      first.inputs[1] = weight_name;
      if (!bias_name.empty()) first.inputs[2] = bias_name;
      first.outputs = {product};
      for (size_t i = 1; i < group.size(); ++i) doomed.insert(group[i]);
      splits.push_back({&first, std::move(split)});
      merged += group.size() - 1;
    }
  for (auto& [after, split] : splits)
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      if (graph.nodes[i].get() == after) {
        graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                           std::make_unique<Node>(std::move(split)));
        break;
      }
  RemoveNodes(graph, doomed);
  // The separate weights and biases go unless something else reads them (a subgraph, a graph output).
  if (merged > 0) {
    std::set<std::string> read;
    for (const auto& node : graph.nodes) {
      read.insert(node->inputs.begin(), node->inputs.end());
      for (const auto& [name, attribute] : node->attributes) {
        if (attribute.g) read.merge(attribute.g->OuterScopeReferences());
        for (const auto& g : attribute.graphs) read.merge(g->OuterScopeReferences());
      }
    }
    for (const ValueInfo& output : graph.outputs) read.insert(output.name);
    for (const std::string& name : separate)
      if (!read.count(name)) graph.initializers.erase(name);
  }
  return merged;
}

}  // namespace tessera
