#include "graph/passes/attention_mask_narrowing.h"

#include <algorithm>
#include <set>

#include "tessera/ep/broadcast.h"
#include "tessera/ep/reshape_target.h"
#include "tessera/status.h"

namespace tessera {

namespace {

bool IsAttention(const Node& node) { return node.op_type == "Attention" && node.domain == "ai.tessera"; }

constexpr size_t kMaskInput = 3;

// Whether `value` is read only as the mask of Attention nodes (not a graph output, not read by a subgraph).
bool OnlyAttentionMask(const Graph& graph, const GraphIndex& index, const std::string& value) {
  if (graph.IsGraphOutput(value) || index.ReadBySubgraph(value)) return false;
  const std::vector<Node*>& readers = index.Consumers(value);
  return !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](const Node* reader) {
    if (!IsAttention(*reader)) return false;
    for (size_t i = 0; i < reader->inputs.size(); ++i)
      if (reader->inputs[i] == value && i != kMaskInput) return false;
    return true;
  });
}

// Whether constant `value` is bool with every element equal to `fill`.
bool AllBool(const Graph& graph, const std::string& value, bool fill) {
  const Tensor* t = ConstantTensor(graph, value);
  if (t == nullptr || t->type() != DataType::kBool) return false;
  const bool* data = t->Data<bool>();
  return std::all_of(data, data + t->NumElements(), [&](bool b) { return b == fill; });
}

bool OneElementConstant(const Graph& graph, const std::string& value) {
  const Tensor* t = ConstantTensor(graph, value);
  return t != nullptr && t->NumElements() == 1;
}

// The narrower value that `node`'s output only broadcasts: Expand's input, or the operand of an And / Or whose
// other operand is a constant of all true / all false. nullopt for any other node.
std::optional<std::string> BroadcastSource(const Graph& graph, const Node& node) {
  if (IsStandardOp(&node, "Expand") && node.inputs.size() == 2 && !node.inputs[0].empty()) return node.inputs[0];
  const bool is_and = IsStandardOp(&node, "And"), is_or = IsStandardOp(&node, "Or");
  if ((is_and || is_or) && node.inputs.size() == 2) {
    for (size_t i = 0; i < 2; ++i)
      if (AllBool(graph, node.inputs[1 - i], is_and) && !node.inputs[i].empty()) return node.inputs[i];
  }
  return std::nullopt;
}

// Whether a mask of dims `narrow` may stand for one of dims `wide`: rank at most 4, and the batch and heads axes (of
// the shapes aligned to rank 4) equal, the query and key axes equal or 1. Broadcasting then gives the kernels the
// same mask.
bool NarrowsOnlyQueriesAndKeys(const std::vector<int64_t>& narrow, const std::vector<int64_t>& wide) {
  if (narrow.size() > 4 || wide.size() > 4 || narrow.size() > wide.size()) return false;
  const auto at = [](const std::vector<int64_t>& dims, size_t axis) {  // axis of the rank-4 alignment
    const size_t pad = 4 - dims.size();
    return axis < pad ? int64_t{1} : dims[axis - pad];
  };
  for (size_t axis = 0; axis < 4; ++axis) {
    const int64_t a = at(narrow, axis), b = at(wide, axis);
    if (axis < 2 ? a != b : (a != b && a != 1)) return false;
  }
  return true;
}

// The dims of `value`: stated by the model, or derived through the ops a mask is built of (Cast, Not, Identity,
// Reshape and Expand by constant shapes, broadcasting elementwise ops), whose exports often state no shapes.
std::optional<std::vector<int64_t>> DimsOfOutput(const Graph& graph, const GraphIndex& index, const Node& node,
                                                 int depth);

std::optional<std::vector<int64_t>> DimsOf(const Graph& graph, const GraphIndex& index, const std::string& value,
                                           int depth = 0) {
  if (std::optional<std::vector<int64_t>> stated = StaticDims(graph, value)) return stated;
  if (const Tensor* constant = ConstantTensor(graph, value)) {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < constant->shape().rank(); ++d) dims.push_back(constant->shape()[d]);
    return dims;
  }
  const Node* node = index.Producer(value);
  if (node == nullptr || depth > 16 || node->outputs.empty() || node->outputs[0] != value) return std::nullopt;
  return DimsOfOutput(graph, index, *node, depth);
}

// The dims of `node`'s first output derived from its inputs (not from what the model states about it).
std::optional<std::vector<int64_t>> DimsOfOutput(const Graph& graph, const GraphIndex& index, const Node& node,
                                                 int depth) {
  const auto input = [&](size_t i) { return DimsOf(graph, index, node.inputs[i], depth + 1); };
  const auto constant_shape = [&](size_t i) -> std::optional<std::vector<int64_t>> {
    const Tensor* t = i < node.inputs.size() ? ConstantTensor(graph, node.inputs[i]) : nullptr;
    if (t == nullptr || t->type() != DataType::kInt64 || t->shape().rank() != 1) return std::nullopt;
    return std::vector<int64_t>(t->Data<int64_t>(), t->Data<int64_t>() + t->NumElements());
  };
  if (IsStandardOp(&node, "Cast") || IsStandardOp(&node, "Not") || IsStandardOp(&node, "Identity")) return input(0);
  std::vector<std::optional<std::vector<int64_t>>> operands;
  if (IsStandardOp(&node, "Reshape") && node.inputs.size() == 2) {
    const std::optional<std::vector<int64_t>> target = constant_shape(1);
    if (!target) return std::nullopt;
    // A target of stated dims is the shape whatever the input (Hugging Face's [B, 1, 1, K] row, after a Gather
    // whose shape this does not derive); 0 and -1 need the input's.
    if (std::all_of(target->begin(), target->end(), [](int64_t d) { return d > 0; })) return target;
    const std::optional<std::vector<int64_t>> from = input(0);
    if (!from) return std::nullopt;
    try {  // Reshape's own rule; a request the kernel would reject is left to it
      return ReshapeTarget(node, Shape(*from), *target, node.GetInt("allowzero", 0) != 0);
    } catch (const Error&) {
      return std::nullopt;
    }
  }
  if (IsStandardOp(&node, "Expand") && node.inputs.size() == 2) {
    operands = {input(0), constant_shape(1)};
  } else {
    static const std::set<std::string> kBroadcasting = {"And", "Or", "Xor", "Where", "Add", "Sub", "Mul", "Div",
                                                         "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"};
    if (!node.domain.empty() || kBroadcasting.count(node.op_type) == 0) return std::nullopt;
    for (size_t i = 0; i < node.inputs.size(); ++i) operands.push_back(input(i));
  }
  std::vector<Shape> shapes;
  for (const std::optional<std::vector<int64_t>>& dims : operands) {
    if (!dims) return std::nullopt;
    shapes.emplace_back(*dims);
  }
  try {  // the kernels' broadcasting rule; shapes it rejects are left to them
    return BroadcastShapes(node, shapes).dims();
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool NarrowsOnlyQueriesAndKeys(const Graph& graph, const GraphIndex& index, const std::string& narrow,
                               const std::string& wide) {
  const std::optional<std::vector<int64_t>> n = DimsOf(graph, index, narrow), w = DimsOf(graph, index, wide);
  return n && w && NarrowsOnlyQueriesAndKeys(*n, *w);
}

void SetStaticShape(Graph& graph, const std::string& value, const std::vector<int64_t>& dims) {
  ValueInfo& info = graph.value_infos[value];
  info.name = value;
  std::vector<Dim> shape;
  for (int64_t d : dims) shape.push_back(Dim{d, "", ""});
  info.shape = shape;
}

}  // namespace

size_t NarrowAttentionMasks(Graph& graph) {
  size_t changes = 0;
  for (bool changed = true; changed;) {
    changed = false;
    GraphIndex index(graph);
    std::set<std::string> masks;
    for (const auto& node : graph.nodes)
      if (IsAttention(*node) && node->HasInput(kMaskInput)) masks.insert(node->inputs[kMaskInput]);
    std::set<const Node*> doomed;
    for (const std::string& mask : masks) {
      if (!OnlyAttentionMask(graph, index, mask)) continue;
      Node* producer = index.Producer(mask);
      if (producer == nullptr || doomed.count(producer)) continue;
      // The mask itself only broadcasts a narrower value: the attentions read that.
      if (const std::optional<std::string> source = BroadcastSource(graph, *producer)) {
        if (!NarrowsOnlyQueriesAndKeys(graph, index, *source, mask)) continue;
        for (Node* reader : index.Consumers(mask)) reader->inputs[kMaskInput] = *source;
        doomed.insert(producer);
        changed = true;
        ++changes;
        continue;
      }
      // An elementwise node over such a broadcast: it reads the narrower value, and its output narrows with it.
      const bool where = IsStandardOp(producer, "Where") && producer->inputs.size() == 3 &&
                         OneElementConstant(graph, producer->inputs[1]) &&
                         OneElementConstant(graph, producer->inputs[2]);
      const bool unary = (IsStandardOp(producer, "Cast") || IsStandardOp(producer, "Not")) &&
                         producer->inputs.size() == 1;
      if (!where && !unary) continue;
      const std::string wide = producer->inputs[0];
      if (wide.empty() || !index.OnlyReadBy(wide, *producer)) continue;
      Node* broadcast = index.Producer(wide);
      if (broadcast == nullptr || doomed.count(broadcast)) continue;
      const std::optional<std::string> source = BroadcastSource(graph, *broadcast);
      const std::optional<std::vector<int64_t>> mask_dims = DimsOf(graph, index, mask);
      if (!source || !mask_dims) continue;
      const std::vector<std::string> before = producer->inputs;
      producer->inputs[0] = *source;
      const std::optional<std::vector<int64_t>> narrowed = DimsOfOutput(graph, index, *producer, 0);
      if (!narrowed || !NarrowsOnlyQueriesAndKeys(*narrowed, *mask_dims)) {
        producer->inputs = before;
        continue;
      }
      SetStaticShape(graph, mask, *narrowed);
      doomed.insert(broadcast);
      changed = true;
      ++changes;
    }
    RemoveNodes(graph, doomed);
  }
  return changes;
}

}  // namespace tessera
