#include "graph/passes/packed_qkv_attention.h"

#include <algorithm>
#include <map>
#include <string>

namespace tessera {
namespace {

// The rank-4 target [t0, t1, H, D] of `reshape` (H stated, also where the constant infers it) when it is a constant,
// allowzero is 0, and it splits the last axis of its input (`width` = H D wide) into heads and features: then the
// leading entries only regroup the input's rows, as they would the merged projection's. A stated or inferred (-1)
// entry does so whatever the input's rank; a 0 copies the input's dim at its position, which must not be the last
// one (`rank`: the input's, when known).
std::optional<std::vector<int64_t>> HeadSplitTarget(const Graph& graph, const Node& reshape, int64_t width,
                                                    std::optional<int64_t> rank) {
  if (!IsStandardOp(&reshape, "Reshape") || reshape.inputs.size() != 2 || reshape.GetInt("allowzero", 0) != 0)
    return std::nullopt;
  const Tensor* target = ConstantTensor(graph, reshape.inputs[1]);
  if (target == nullptr || target->type() != DataType::kInt64 || target->NumElements() != 4) return std::nullopt;
  std::vector<int64_t> t(target->Data<int64_t>(), target->Data<int64_t>() + 4);
  if (t[3] <= 0 || width % t[3] != 0) return std::nullopt;
  // The head count may be the inferred entry (Hugging Face's view(*input_shape, -1, head_size)); the result
  // states it.
  int inferred = t[2] == -1 ? 1 : 0;
  if (t[2] == -1) t[2] = width / t[3];
  if (t[2] <= 0 || t[2] * t[3] != width) return std::nullopt;
  for (int64_t i = 0; i < 2; ++i) {
    if (t[i] == 0 && !(rank && i < *rank - 1)) return std::nullopt;
    if (t[i] < -1) return std::nullopt;
    inferred += t[i] == -1;
  }
  if (inferred > 1) return std::nullopt;
  return t;
}

// The number of entries of a Reshape target: a constant's, or a Concat's of constants and of scalars made 1-D
// (Unsqueeze of a Gather of one dim, as exporters compute the leading dims).
std::optional<int64_t> TargetLength(const Graph& graph, const GraphIndex& index, const std::string& target) {
  if (const Tensor* constant = ConstantTensor(graph, target)) return constant->NumElements();
  const Node* concat = index.Producer(target);
  if (!IsStandardOp(concat, "Concat")) return std::nullopt;
  int64_t length = 0;
  for (const std::string& part : concat->inputs) {
    if (const Tensor* constant = ConstantTensor(graph, part)) {
      length += constant->NumElements();
      continue;
    }
    const Node* unsqueeze = index.Producer(part);
    const Node* gather = IsStandardOp(unsqueeze, "Unsqueeze") ? index.Producer(unsqueeze->inputs[0]) : nullptr;
    const Tensor* at = IsStandardOp(gather, "Gather") && gather->inputs.size() == 2
                           ? ConstantTensor(graph, gather->inputs[1]) : nullptr;
    if (at == nullptr || at->shape().rank() != 0) return std::nullopt;
    length += 1;
  }
  return length;
}

// The rank of `value` where its shape states it, or traced back through the ops of an encoder stack that keep their
// first input's rank -- products of a 2-D weight, normalizations, activations, Slice, Transpose, element-wise ops
// (the higher of two operands' ranks), an embedding Gather (the indices' rank plus the table's minus one), a Reshape
// (its target's length) -- to values whose rank is stated or constant: transformer exports state the shapes of
// graph inputs only. nullopt when the trace ends elsewhere or `depth` runs out.
std::optional<int64_t> TracedRank(const Graph& graph, const GraphIndex& index, const std::string& value,
                                  std::map<std::string, std::optional<int64_t>>& memo, int depth = 256) {
  if (const std::optional<int64_t> rank = RankOf(graph, value)) return rank;
  if (const Tensor* constant = ConstantTensor(graph, value)) return static_cast<int64_t>(constant->shape().rank());
  if (depth == 0) return std::nullopt;
  if (auto it = memo.find(value); it != memo.end()) return it->second;
  std::optional<int64_t> rank;
  const Node* p = index.Producer(value);
  if (p != nullptr && !p->inputs.empty() && p->outputs[0] == value) {
    const std::string& op = p->op_type;
    const bool standard = p->domain.empty() || p->domain == "ai.onnx";
    const bool contrib = p->domain == "ai.tessera" || p->domain == "com.microsoft";
    if ((standard && op == "MatMul") || (contrib && op == "FusedMatMul")) {
      const Tensor* weight = p->inputs.size() >= 2 ? ConstantTensor(graph, p->inputs[1]) : nullptr;
      if (weight != nullptr ? weight->shape().rank() == 2 : RankOf(graph, p->inputs[1]) == 2)
        rank = TracedRank(graph, index, p->inputs[0], memo, depth - 1);
    } else if ((standard && (op == "LayerNormalization" || op == "Relu" || op == "Gelu" || op == "Erf" ||
                             op == "Tanh" || op == "Sigmoid" || op == "Cast" || op == "Identity" || op == "Dropout" ||
                             op == "Slice" || op == "Transpose")) ||
               (contrib && (op == "SkipLayerNormalization" || op == "SimplifiedLayerNormalization" ||
                            op == "SkipSimplifiedLayerNormalization" || op == "Gelu" || op == "FastGelu" ||
                            op == "BiasGelu"))) {
      rank = TracedRank(graph, index, p->inputs[0], memo, depth - 1);
    } else if (standard && (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && p->inputs.size() == 2) {
      const std::optional<int64_t> a = TracedRank(graph, index, p->inputs[0], memo, depth - 1);
      const std::optional<int64_t> b = a ? TracedRank(graph, index, p->inputs[1], memo, depth - 1) : std::nullopt;
      if (a && b) rank = std::max(*a, *b);
    } else if (standard && op == "Reshape" && p->inputs.size() == 2) {
      rank = TargetLength(graph, index, p->inputs[1]);
    } else if (standard && op == "Gather" && p->inputs.size() == 2 && p->GetInt("axis", 0) == 0) {
      const Tensor* data = ConstantTensor(graph, p->inputs[0]);
      const std::optional<int64_t> indices = TracedRank(graph, index, p->inputs[1], memo, depth - 1);
      if (data != nullptr && data->shape().rank() >= 1 && indices)
        rank = *indices + static_cast<int64_t>(data->shape().rank()) - 1;
    }
  }
  memo[value] = rank;
  return rank;
}

// The rank of the merged projection `y` (TracedRank).
std::optional<int64_t> ProjectionRank(const Graph& graph, const GraphIndex& index, const std::string& y) {
  std::map<std::string, std::optional<int64_t>> memo;
  return TracedRank(graph, index, y, memo);
}

// Whether the Attention reads `operand` ("q_axes" ...) as [batch, seq, heads, features] or [seq, batch, ...]: heads
// on axis 2 and features on axis 3, so that heads are consecutive blocks of a row's features.
bool HeadsThenFeatures(const Node& attention, const char* axes_attribute, std::vector<int64_t> fallback) {
  const std::vector<int64_t> axes = attention.GetInts(axes_attribute, std::move(fallback));
  return axes.size() == 4 && axes[1] == 2 && axes[3] == 3;
}

}  // namespace

size_t PackAttentionProjections(Graph& graph, const CanFuse& can_fuse) {
  size_t packed = 0;
  GraphIndex index(graph);
  NewValues values(graph);
  std::set<const Node*> doomed;
  for (const auto& node : graph.nodes) {
    Node& attention = *node;
    if (attention.op_type != "Attention" || attention.domain != "ai.tessera" || attention.inputs.size() < 3 ||
        attention.inputs.size() > 4 || attention.GetInt("packed_heads", 0) != 0)
      continue;
    if (!HeadsThenFeatures(attention, "q_axes", {0, 1, 2, 3}) || !HeadsThenFeatures(attention, "k_axes", {0, 1, 3, 2}) ||
        !HeadsThenFeatures(attention, "v_axes", {0, 1, 2, 3}))
      continue;
    // Q, K, V: Reshapes of parts 0, 1, 2 of one Split, each read once (three different values).
    std::vector<Node*> reshapes;
    Node* split = nullptr;
    bool match = true;
    for (size_t i = 0; match && i < 3; ++i) {
      size_t reads = 0;
      for (const std::string& in : attention.inputs) reads += in == attention.inputs[i];
      Node* reshape = index.Producer(attention.inputs[i]);
      match = reads == 1 && reshape != nullptr && IsStandardOp(reshape, "Reshape") && !reshape->inputs.empty() &&
              index.OnlyReadBy(attention.inputs[i], attention) && !index.ReadBySubgraph(attention.inputs[i]);
      if (!match) break;
      Node* producer = index.Producer(reshape->inputs[0]);
      match = producer != nullptr && IsStandardOp(producer, "Split") && (split == nullptr || split == producer) &&
              producer->outputs.size() == 3 && producer->outputs[i] == reshape->inputs[0] &&
              index.OnlyReadBy(reshape->inputs[0], *reshape) && !index.ReadBySubgraph(reshape->inputs[0]);
      split = producer;
      reshapes.push_back(reshape);
    }
    if (!match || split == nullptr || split->inputs.empty()) continue;
    // Three equal parts along y's last axis, and one target splitting each part's last axis into heads.
    const std::string& y = split->inputs[0];
    const std::optional<int64_t> rank = ProjectionRank(graph, index, y);
    const int64_t split_axis = split->GetInt("axis", 0);
    const std::optional<int64_t> axis = NormalizedAxis(split_axis, rank);
    if (!(split_axis == -1 || (rank && axis == *rank - 1))) continue;
    const std::optional<std::vector<int64_t>> sizes = SplitSizes(graph, *split, axis.value_or(-1));
    if (!sizes || (*sizes)[0] != (*sizes)[1] || (*sizes)[1] != (*sizes)[2]) continue;
    std::optional<std::vector<int64_t>> target;
    for (const Node* reshape : reshapes) {
      const std::optional<std::vector<int64_t>> t = HeadSplitTarget(graph, *reshape, (*sizes)[0], rank);
      match = t && (!target || *target == *t);
      if (!match) break;
      target = t;
    }
    if (!match || !can_fuse(attention, graph, "Attention", "ai.tessera", 4)) continue;

    // The Split becomes the one Reshape of y (it stands before the old Reshapes, after y's producer).
    std::vector<int64_t> packed_target = *target;
    packed_target[2] *= 3;
    const std::string z = values.Fresh(split->name + "_heads");
    ValueInfo info;
    info.name = z;
    for (const std::string& typed : {y, split->outputs[0]})
      if (const ValueInfo* known = graph.FindValueInfo(typed); known != nullptr && info.type == DataType::kUndefined)
        info.type = known->type;
    for (size_t i = 0; i < 3; ++i) {
      graph.value_infos.erase(split->outputs[i]);
      graph.value_infos.erase(attention.inputs[i]);
      attention.inputs[i] = z;
    }
    graph.value_infos[z] = info;
    Node reshape;
    reshape.name = split->name + "_heads";
    reshape.op_type = "Reshape";
    reshape.opset = std::max(split->opset, 5);
    reshape.inputs = {y, values.Int64s(split->name + "_heads_shape", packed_target)};
    reshape.outputs = {z};
    *split = std::move(reshape);
    attention.attributes["packed_heads"] = IntAttribute("packed_heads", (*target)[2]);
    for (Node* r : reshapes) doomed.insert(r);
    ++packed;
  }
  RemoveNodes(graph, doomed);
  return packed;
}

}  // namespace tessera
