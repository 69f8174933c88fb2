#include "graph/passes/packed_qkv_attention.h"

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

// The rank of the merged projection `y`: its stated shape's, or, for a product of a 2-D weight, its input's.
std::optional<int64_t> ProjectionRank(const Graph& graph, const GraphIndex& index, const std::string& y) {
  if (const std::optional<int64_t> rank = RankOf(graph, y)) return rank;
  const Node* product = index.Producer(y);
  if (product == nullptr || product->inputs.size() < 2 ||
      !(IsStandardOp(product, "MatMul") || (product->op_type == "FusedMatMul" && product->domain == "ai.tessera")))
    return std::nullopt;
  const std::optional<int64_t> weight_rank = RankOf(graph, product->inputs[1]);
  const Tensor* weight = ConstantTensor(graph, product->inputs[1]);
  if (!(weight != nullptr ? weight->shape().rank() == 2 : weight_rank == 2)) return std::nullopt;
  return RankOf(graph, product->inputs[0]);
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
