#include "graph/passes/conv_activation_fusion.h"

#include "graph/passes/activation_match.h"

#include <utility>

namespace tessera {
namespace {

bool IsDefaultDomain(const Node* node, const char* op_type) {
  return node != nullptr && node->op_type == op_type && node->domain.empty() && node->outputs.size() == 1;
}

// SiLU as exporters write it: s = Sigmoid(v), y = Mul(v, s) (either order), v read by exactly those two and s
// by the Mul alone. Returns (Sigmoid, Mul).
std::optional<std::pair<Node*, Node*>> MatchSilu(const Graph& graph, const GraphIndex& index,
                                                 const std::string& value) {
  const std::vector<Node*>& readers = index.Consumers(value);
  if (readers.size() != 2 || graph.IsGraphOutput(value) || index.ReadBySubgraph(value)) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    Node* sigmoid = readers[static_cast<size_t>(first)];
    Node* mul = readers[static_cast<size_t>(1 - first)];
    if (!IsDefaultDomain(sigmoid, "Sigmoid") || !IsDefaultDomain(mul, "Mul") || mul->inputs.size() != 2) continue;
    const std::string& gate = sigmoid->outputs[0];
    const bool reads_both = (mul->inputs[0] == value && mul->inputs[1] == gate) ||
                            (mul->inputs[1] == value && mul->inputs[0] == gate);
    if (reads_both && index.OnlyReadBy(gate, *mul)) return std::pair{sigmoid, mul};
  }
  return std::nullopt;
}

struct ConvMatch {
  Node* conv = nullptr;
  std::vector<Node*> followers;  // Add and/or activation, in order; the last one is rewritten
  std::string residual;
  std::optional<MatchedActivation> activation;
  Node* clip = nullptr;  // a Clip with constant limits after the activation (activation_clip), if any
  std::vector<float> clip_limits;
};

std::optional<ConvMatch> Match(const Graph& graph, const GraphIndex& index, Node& conv) {
  const bool transposed = IsDefaultDomain(&conv, "ConvTranspose");
  if ((!transposed && !IsDefaultDomain(&conv, "Conv")) || conv.NumInputs() < 2 || conv.inputs.size() > 3)
    return std::nullopt;
  ConvMatch match;
  match.conv = &conv;
  std::string value = conv.outputs[0];
  Node* next = index.SoleReader(value);
  if (!transposed && IsDefaultDomain(next, "Add") && next->inputs.size() == 2 && next->inputs[0] != next->inputs[1]) {
    match.residual = next->inputs[0] == value ? next->inputs[1] : next->inputs[0];
    match.followers.push_back(next);
    value = next->outputs[0];
    next = index.SoleReader(value);
  }
  if ((match.activation = MatchActivation(graph, next, false))) {
    match.followers.push_back(next);
  } else if (std::optional<std::pair<Node*, Node*>> silu = MatchSilu(graph, index, value)) {
    match.followers.push_back(silu->first);
    match.followers.push_back(silu->second);
    match.activation = MatchedActivation{"Swish", {1.0f}};
  }
  if (match.followers.empty()) return std::nullopt;
  if (match.activation) {
    const std::string& activated = match.followers.back()->outputs[0];
    Node* after = graph.IsGraphOutput(activated) || index.ReadBySubgraph(activated) ? nullptr : index.SoleReader(activated);
    const std::optional<MatchedActivation> clip = IsDefaultDomain(after, "Clip") ? MatchActivation(graph, after, false)
                                                                                   : std::nullopt;
    if (clip && clip->name == "Clip" && clip->params.size() == 2 && clip->params[0] <= clip->params[1]) {
      match.clip = after;
      match.clip_limits = clip->params;
    }
  }
  return match;
}

}  // namespace

size_t FuseConvActivation(Graph& graph, const CanFuse& can_fuse, const CanRun& can_run) {
  GraphIndex index(graph);
  std::set<const Node*> doomed, claimed;  // claimed: every node of an earlier match, the rewritten one included
  size_t fused = 0;
  for (const auto& node : graph.nodes) {
    std::optional<ConvMatch> match = Match(graph, index, *node);
    if (!match) continue;
    const char* fused_op = match->conv->op_type == "Conv" ? "FusedConv" : "FusedConvTranspose";
    if (!can_fuse(*node, graph, fused_op, "ai.tessera", 0)) continue;
    bool taken = false;
    for (const Node* follower : match->followers) taken = taken || claimed.count(follower);
    if (taken) continue;
    Node& conv = *match->conv;
    Node fused_node;
    fused_node.name = conv.name + "_fused";
    fused_node.op_type = fused_op;
    fused_node.domain = "ai.tessera";
    fused_node.opset = 1;
    fused_node.inputs = conv.inputs;
    if (!match->residual.empty()) {
      fused_node.inputs.resize(3);
      fused_node.inputs.push_back(match->residual);
    }
    fused_node.attributes = conv.attributes;
    if (match->activation) SetActivationAttributes(fused_node, *match->activation);
    // The Clip after the activation, where the EP running the convolution takes the attribute.
    if (match->clip != nullptr && !claimed.count(match->clip)) {
      Node clamped = fused_node;
      clamped.outputs = {match->clip->outputs[0]};
      Attribute limits;
      limits.name = "activation_clip";
      limits.type = Attribute::Type::kFloats;
      limits.floats = match->clip_limits;
      clamped.attributes["activation_clip"] = limits;
      if (can_run && can_run(*node, graph, clamped)) {
        match->followers.push_back(match->clip);
        fused_node = std::move(clamped);
      }
    }
    claimed.insert(match->followers.begin(), match->followers.end());
    Node* last = match->followers.back();
    fused_node.outputs = {last->outputs[0]};
    for (const Node* follower : match->followers)
      if (follower != last) graph.value_infos.erase(follower->outputs[0]);
    graph.value_infos.erase(conv.outputs[0]);
    doomed.insert(&conv);
    for (const Node* follower : match->followers)
      if (follower != last) doomed.insert(follower);
    *last = std::move(fused_node);
    ++fused;
  }
  if (fused > 0) graph.opsets.emplace("ai.tessera", 1);
  RemoveNodes(graph, doomed);
  return fused;
}

}  // namespace tessera
