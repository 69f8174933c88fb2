#include "graph/passes/contrib_attention_expansion.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/passes/graph_rewrite.h"
#include "tessera/status.h"

namespace tessera {
namespace {

constexpr const char* kContrib = "com.microsoft";

class Expansion {
 public:
  Expansion(Graph& graph, const Node& attention) : graph_(graph), attention_(attention) {
    // A model made of contrib ops alone imports no default domain: the expansion's standard ops then use opset 17.
    opset_ = graph.opsets.emplace("", 17).first->second;
  }

  // The nodes replacing the Attention, in order.
  std::vector<std::unique_ptr<Node>> Build() {
    const Node& a = attention_;
    const auto refuse = [&](const auto&... why) { Fail(ErrorCode::kNotImplemented, a.Describe(), ": ", why...); };
    if (a.GetInt("do_rotary", 0) != 0) refuse("do_rotary is not supported");
    if (a.GetInt("past_present_share_buffer", 0) != 0) refuse("past_present_share_buffer is not supported");
    if (a.HasInput(6)) refuse("input 6 (past_sequence_length) is not supported");
    if (a.inputs.size() < 2 || !a.HasInput(0) || !a.HasInput(1))
      Fail(ErrorCode::kInvalidModel, a.Describe(), ": needs its input and weights");
    if (opset_ < 10) refuse("the expansion needs default-domain opset 10 or later (Slice with inputs), the model has ",
                            opset_);
    const int64_t heads = a.GetInt("num_heads", 0);
    if (heads <= 0) Fail(ErrorCode::kInvalidModel, a.Describe(), ": num_heads must be positive, got ", heads);

    // Widths of Q, K and V in the projection.
    std::vector<int64_t> widths = a.GetInts("qkv_hidden_sizes");
    if (widths.empty()) {
      std::optional<std::vector<int64_t>> w = StaticDims(graph_, a.inputs[1]);
      if (const Tensor* weights = ConstantTensor(graph_, a.inputs[1])) w = weights->shape().dims();
      if (!w || w->size() != 2 || (*w)[1] % 3 != 0)
        refuse("without qkv_hidden_sizes the weights' shape must be known, [input_hidden, 3 * hidden]");
      widths.assign(3, (*w)[1] / 3);
    }
    if (widths.size() != 3 || widths[0] != widths[1])
      refuse("qkv_hidden_sizes must give equal query and key widths, got ", widths.size(), " values");

    const std::string base = a.name.empty() ? "Attention" : a.name;
    const std::string qkv = Emit("MatMul", {a.inputs[0], a.inputs[1]}, base + "/qkv");
    std::vector<std::string> parts;
    int64_t start = 0;
    for (int part = 0; part < 3; ++part) {
      const std::string suffix = part == 0 ? "q" : part == 1 ? "k" : "v";
      parts.push_back(Emit("Slice",
                           {qkv, Ints(base + "/" + suffix + "_start", {start}),
                            Ints(base + "/" + suffix + "_end", {start + widths[static_cast<size_t>(part)]}),
                            Ints(base + "/" + suffix + "_axes", {-1})},
                           base + "/" + suffix));
      start += widths[static_cast<size_t>(part)];
    }
    std::string past_key, past_value;
    if (a.HasInput(4)) {
      past_key = Emit("Gather", {a.inputs[4], Scalar(base + "/past_key_index", 0)}, base + "/past_key");
      past_value = Emit("Gather", {a.inputs[4], Scalar(base + "/past_value_index", 1)}, base + "/past_value");
    }
    const bool present = a.outputs.size() > 1 && !a.outputs[1].empty();

    auto mha = std::make_unique<Node>();
    mha->name = a.name;
    mha->op_type = "MultiHeadAttention";
    mha->domain = kContrib;
    mha->opset = 1;
    const auto input = [&](size_t i) { return a.HasInput(i) ? a.inputs[i] : std::string(); };
    mha->inputs = {parts[0], parts[1], parts[2], input(2), input(3), input(5), past_key, past_value};
    while (!mha->inputs.empty() && mha->inputs.back().empty()) mha->inputs.pop_back();
    mha->outputs = {a.outputs[0]};
    if (present || !past_key.empty()) {
      mha->outputs.push_back(Fresh(base + "/present_key"));
      mha->outputs.push_back(Fresh(base + "/present_value"));
    }
    for (const char* copied : {"num_heads", "scale", "mask_filter_value", "unidirectional"})
      if (auto it = a.attributes.find(copied); it != a.attributes.end()) mha->attributes[copied] = it->second;
    const std::vector<std::string> mha_outputs = mha->outputs;
    nodes_.push_back(std::move(mha));

    if (present) {
      const std::string key = Unsqueezed(mha_outputs[1], base + "/present_key_2");
      const std::string value = Unsqueezed(mha_outputs[2], base + "/present_value_2");
      auto& concat = nodes_.emplace_back(std::make_unique<Node>());
      concat->name = base + "/present";
      concat->op_type = "Concat";
      concat->opset = opset_;
      concat->inputs = {key, value};
      concat->outputs = {a.outputs[1]};
      concat->attributes["axis"] = IntAttribute("axis", 0);
    }
    return std::move(nodes_);
  }

 private:
  std::string Emit(const std::string& op, std::vector<std::string> inputs, const std::string& output_base) {
    auto& node = nodes_.emplace_back(std::make_unique<Node>());
    node->name = Fresh(output_base + "_node");
    node->op_type = op;
    node->opset = opset_;
    node->inputs = std::move(inputs);
    node->outputs = {Fresh(output_base)};
    return node->outputs[0];
  }

  // `x` with a leading axis of 1 (Unsqueeze's axes: an attribute before opset 13, an input from 13).
  std::string Unsqueezed(const std::string& x, const std::string& output_base) {
    if (opset_ >= 13) return Emit("Unsqueeze", {x, Ints(output_base + "_axes", {0})}, output_base);
    const std::string out = Emit("Unsqueeze", {x}, output_base);
    nodes_.back()->attributes["axes"] = IntsAttribute("axes", {0});
    return out;
  }

  std::string Fresh(const std::string& base) { return values_.Fresh(base); }
  std::string Ints(const std::string& base, const std::vector<int64_t>& values) { return values_.Int64s(base, values); }
  std::string Scalar(const std::string& base, int64_t value) { return values_.Int64Scalar(base, value); }

  Graph& graph_;
  const Node& attention_;
  int opset_ = 0;
  std::vector<std::unique_ptr<Node>> nodes_;
  NewValues values_{graph_};
};

size_t ExpandIn(Graph& graph) {
  size_t expanded = 0;
  for (auto& node : graph.nodes)
    for (auto& [name, attribute] : node->attributes) {
      if (attribute.g) expanded += ExpandIn(*attribute.g);
      for (auto& g : attribute.graphs)
        if (g) expanded += ExpandIn(*g);
    }
  std::vector<std::unique_ptr<Node>> nodes;
  for (auto& node : graph.nodes) {
    if (node->op_type != "Attention" || node->domain != kContrib) {
      nodes.push_back(std::move(node));
      continue;
    }
    for (auto& replacement : Expansion(graph, *node).Build()) nodes.push_back(std::move(replacement));
    ++expanded;
  }
  graph.nodes = std::move(nodes);
  if (expanded > 0) graph.opsets.emplace(kContrib, 1);
  return expanded;
}

}  // namespace

size_t ExpandContribAttention(Graph& graph) { return ExpandIn(graph); }

}  // namespace tessera
