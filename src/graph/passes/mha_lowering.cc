#include "graph/passes/mha_lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessera {
namespace {

// The last dim of `value` when its rank is 3 and that dim is concrete.
std::optional<int64_t> LastDimOfRank3(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || !info->shape || info->shape->size() != 3 || !info->shape->back().is_concrete())
    return std::nullopt;
  return info->shape->back().value;
}

class Lowering {
 public:
  Lowering(Graph& graph, const FusedOpPreferred& preferred) : graph_(graph), preferred_(preferred) {}

  // The replacement nodes for `mha`, or nothing when it keeps its form.
  std::vector<std::unique_ptr<Node>> Lower(const Node& mha) {
    std::vector<std::unique_ptr<Node>> none;
    nodes_.clear();
    if (mha.op_type != "MultiHeadAttention" || mha.domain != "com.microsoft") return none;
    if (!preferred_ || !preferred_("Attention", "ai.tessera")) return none;
    for (size_t i : {size_t{6}, size_t{7}, size_t{8}, size_t{9}})
      if (mha.HasInput(i)) return none;  // past, shared buffers, beam search
    for (size_t o = 1; o < mha.outputs.size(); ++o)
      if (!mha.outputs[o].empty()) return none;  // present key/value, qk
    if (mha.GetInt("unidirectional", 0) != 0 || !mha.HasInput(1) || !mha.HasInput(2)) return none;
    const int64_t heads = mha.GetInt("num_heads", 0);
    const DataType type = graph_.TypeOf(mha.inputs[0]);
    if (heads <= 0 || (type != DataType::kFloat && type != DataType::kFloat16)) return none;
    type_ = type;
    const std::optional<int64_t> d = LastDimOfRank3(graph_, mha.inputs[0]), dk = LastDimOfRank3(graph_, mha.inputs[1]),
                                 dv = LastDimOfRank3(graph_, mha.inputs[2]);
    if (!d || !dk || !dv || *dk != *d || *d % heads != 0 || *dv % heads != 0) return none;
    for (size_t i : {size_t{1}, size_t{2}, size_t{5}})
      if (mha.HasInput(i) && graph_.TypeOf(mha.inputs[i]) != type) return none;
    const Tensor* bias = mha.HasInput(3) ? ConstantTensor(graph_, mha.inputs[3]) : nullptr;
    if (mha.HasInput(3) && (bias == nullptr || bias->type() != type || bias->NumElements() != 2 * *d + *dv))
      return none;
    if (mha.HasInput(5)) {  // attention_bias: [B or 1, N or 1, S, T]
      const ValueInfo* info = graph_.FindValueInfo(mha.inputs[5]);
      if (info == nullptr || !info->shape || info->shape->size() != 4) return none;
    }
    size_t mask_rank = 0;  // key_padding_mask: [B, T] or [B, S, T] (not the [B] lengths)
    if (mha.HasInput(4)) {
      const ValueInfo* info = graph_.FindValueInfo(mha.inputs[4]);
      const Tensor* constant = ConstantTensor(graph_, mha.inputs[4]);
      mask_rank = constant ? constant->shape().rank() : info && info->shape ? info->shape->size() : 0;
      if (graph_.TypeOf(mha.inputs[4]) != DataType::kInt32 || (mask_rank != 2 && mask_rank != 3)) return none;
    }

    const std::string base = mha.name.empty() ? "MultiHeadAttention" : mha.name;
    const int64_t head = *d / heads, v_head = *dv / heads;
    const std::vector<int64_t> starts = {0, *d, 2 * *d}, widths = {*d, *d, *dv}, sizes = {head, head, v_head};
    std::vector<std::string> operands;
    for (size_t part = 0; part < 3; ++part) {
      const std::string suffix = part == 0 ? "q" : part == 1 ? "k" : "v";
      std::string x = mha.inputs[part];
      if (bias != nullptr) x = Emit("Add", {x, BiasSlice(*bias, starts[part], widths[part], base + "/bias_" + suffix)},
                                    base + "/" + suffix + "_biased");
      operands.push_back(Emit("Reshape", {x, Ints(base + "/" + suffix + "_heads", {0, 0, heads, sizes[part]})},
                              base + "/" + suffix + "_heads"));
    }
    const std::string mask = Mask(mha, mask_rank, base);  // its nodes come before the attention's
    auto& attention = nodes_.emplace_back(std::make_unique<Node>());
    attention->name = Fresh(base + "/attention");
    attention->op_type = "Attention";
    attention->domain = "ai.tessera";
    attention->opset = 1;
    attention->inputs = operands;
    if (!mask.empty()) attention->inputs.push_back(mask);
    const std::string heads_out = Typed(Fresh(base + "/attention_out"));
    attention->outputs = {heads_out};
    const std::vector<int64_t> axes = {0, 2, 1, 3};  // where (batch, heads, sequence, head) sit in [B, S, N, H]
    for (const char* name : {"q_axes", "k_axes", "v_axes", "out_axes"}) attention->attributes[name] = IntsAttribute(name, axes);
    const float scale = mha.HasAttribute("scale") ? mha.GetFloat("scale") : 1.0f / std::sqrt(static_cast<float>(head));
    attention->attributes["scale"] = FloatAttribute("scale", scale);
    attention->attributes["masked_rows_zero"] = IntAttribute("masked_rows_zero", 0);
    auto& merge = nodes_.emplace_back(std::make_unique<Node>());
    merge->name = Fresh(base + "/merge_heads");
    merge->op_type = "Reshape";
    merge->opset = Opset();
    merge->inputs = {heads_out, Ints(base + "/merged_shape", {0, 0, *dv})};
    merge->outputs = {mha.outputs[0]};
    return std::move(nodes_);
  }

 private:
  int Opset() const {
    auto it = graph_.opsets.find("");
    return it == graph_.opsets.end() ? 17 : std::max(it->second, 14);  // Reshape's allowzero semantics: 14
  }

  std::string Emit(const std::string& op, std::vector<std::string> inputs, const std::string& output_base) {
    auto& node = nodes_.emplace_back(std::make_unique<Node>());
    node->name = Fresh(output_base + "_node");
    node->op_type = op;
    node->opset = Opset();
    node->inputs = std::move(inputs);
    node->outputs = {Typed(Fresh(output_base))};
    return node->outputs[0];
  }

  // `name` with a value info of the lowered node's element type (the passes after this one read types).
  std::string Typed(const std::string& name) {
    ValueInfo info;
    info.name = name;
    info.type = type_;
    graph_.value_infos[name] = info;
    return name;
  }

  std::string Ints(const std::string& base, const std::vector<int64_t>& values) {
    return values_.Int64s(base + "_shape", values);
  }

  // The fused op's additive mask: the attention_bias, plus mask_filter_value where the key padding mask is 0 (what
  // the MultiHeadAttention kernel adds), broadcast as [B, 1, 1, T] or [B, 1, S, T]. Empty when there is neither.
  std::string Mask(const Node& mha, size_t mask_rank, const std::string& base) {
    std::string padding;
    if (mask_rank != 0) {
      const std::string zero = values_.Fresh(base + "/mask_zero");
      graph_.initializers.emplace(zero, Tensor::FromVector<int32_t>(Shape{}, {0}));
      const std::string padded = Emit("Equal", {mha.inputs[4], zero}, base + "/padded");
      graph_.value_infos[padded].type = DataType::kBool;
      const std::string as_type = Emit("Cast", {padded}, base + "/padded_as_type");
      nodes_.back()->attributes["to"] = IntAttribute("to", static_cast<int64_t>(type_));
      const std::string filtered =
          Emit("Mul", {as_type, Scalar(base + "/mask_filter", mha.GetFloat("mask_filter_value", -10000.0f))},
               base + "/padding_bias");
      padding = Emit("Unsqueeze", {filtered, Ints(base + "/mask_axes", mask_rank == 2 ? std::vector<int64_t>{1, 2}
                                                                                      : std::vector<int64_t>{1})},
                     base + "/padding_bias_4d");
    }
    if (!mha.HasInput(5)) return padding;
    if (padding.empty()) return mha.inputs[5];
    return Emit("Add", {mha.inputs[5], padding}, base + "/mask");
  }

  // A scalar initializer of the lowered node's element type.
  std::string Scalar(const std::string& base, float value) {
    const std::string name = values_.Fresh(base);
    Tensor t = Tensor::Allocate(type_, Shape{});
    if (type_ == DataType::kFloat16)
      t.Data<Float16>()[0] = ToFloat16(value);
    else
      t.Data<float>()[0] = value;
    graph_.initializers.emplace(name, std::move(t));
    return name;
  }

  // Elements [start, start + width) of the constant bias, as a new initializer.
  std::string BiasSlice(const Tensor& bias, int64_t start, int64_t width, const std::string& base) {
    const std::string name = Fresh(base);
    Tensor slice = Tensor::Allocate(bias.type(), Shape{width});
    const size_t element = SizeOf(bias.type());
    std::memcpy(slice.raw_data(), static_cast<const char*>(bias.raw_data()) + start * element, width * element);
    graph_.initializers.emplace(name, std::move(slice));
    return name;
  }

  std::string Fresh(const std::string& base) { return values_.Fresh(base); }

  Graph& graph_;
  const FusedOpPreferred& preferred_;
  DataType type_ = DataType::kUndefined;
  std::vector<std::unique_ptr<Node>> nodes_;
  NewValues values_{graph_};
};

}  // namespace

size_t LowerMultiHeadAttention(Graph& graph, const FusedOpPreferred& fused_op_preferred) {
  // Every replacement is built while the node list is intact (fresh names look at it), then the list is rebuilt.
  Lowering lowering(graph, fused_op_preferred);
  std::map<size_t, std::vector<std::unique_ptr<Node>>> replacements;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    std::vector<std::unique_ptr<Node>> replacement = lowering.Lower(*graph.nodes[i]);
    if (!replacement.empty()) replacements.emplace(i, std::move(replacement));
  }
  if (replacements.empty()) return 0;
  std::vector<std::unique_ptr<Node>> nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    auto it = replacements.find(i);
    if (it == replacements.end()) {
      nodes.push_back(std::move(graph.nodes[i]));
      continue;
    }
    for (auto& n : it->second) nodes.push_back(std::move(n));
  }
  graph.nodes = std::move(nodes);
  graph.opsets.emplace("ai.tessera", 1);
  return replacements.size();
}

}  // namespace tessera
