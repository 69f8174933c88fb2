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
  Lowering(Graph& graph, const CanFuse& can_fuse) : graph_(graph), can_fuse_(can_fuse) {}

  // The replacement nodes for `mha`, or nothing when it keeps its form.
  std::vector<std::unique_ptr<Node>> Lower(const Node& mha) {
    std::vector<std::unique_ptr<Node>> none;
    nodes_.clear();
    if (mha.op_type != "MultiHeadAttention" || mha.domain != "com.microsoft") return none;
    if (!can_fuse_(mha, graph_, "Attention", "ai.tessera")) return none;
    for (size_t i : {size_t{4}, size_t{6}, size_t{7}, size_t{8}, size_t{9}})
      if (mha.HasInput(i)) return none;  // key padding mask, past, shared buffers, beam search
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
    auto& attention = nodes_.emplace_back(std::make_unique<Node>());
    attention->name = Fresh(base + "/attention");
    attention->op_type = "Attention";
    attention->domain = "ai.tessera";
    attention->opset = 1;
    attention->inputs = operands;
    if (mha.HasInput(5)) attention->inputs.push_back(mha.inputs[5]);
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
  const CanFuse& can_fuse_;
  DataType type_ = DataType::kUndefined;
  std::vector<std::unique_ptr<Node>> nodes_;
  NewValues values_{graph_};
};

}  // namespace

size_t LowerMultiHeadAttention(Graph& graph, const CanFuse& can_fuse) {
  // Every replacement is built while the node list is intact (fresh names look at it), then the list is rebuilt.
  Lowering lowering(graph, can_fuse);
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
