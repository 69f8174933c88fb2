#include "graph/passes/activation_match.h"

#include <limits>

#include "graph/passes/graph_rewrite.h"

namespace tessera {
namespace {

// Clip's limits: attributes before opset 11, optional constant inputs since (nullopt when not constant).
std::optional<std::vector<float>> ClipLimits(const Graph& graph, const Node& clip) {
  float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
  if (clip.opset < 11) return std::vector<float>{clip.GetFloat("min", lo), clip.GetFloat("max", hi)};
  float* limits[] = {&lo, &hi};
  for (size_t i = 1; i <= 2 && i < clip.inputs.size(); ++i) {
    if (!clip.HasInput(i)) continue;
    std::optional<double> value = ScalarConstant(graph, clip.inputs[i]);
    if (!value) return std::nullopt;
    *limits[i - 1] = static_cast<float>(*value);
  }
  return std::vector<float>{lo, hi};
}

}  // namespace

std::optional<MatchedActivation> MatchActivation(const Graph& graph, const Node* node, bool allow_gelu) {
  if (node == nullptr || !node->domain.empty() || node->outputs.size() != 1) return std::nullopt;
  const std::string& op = node->op_type;
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") return MatchedActivation{op, {}};
  if (op == "LeakyRelu") return MatchedActivation{op, {node->GetFloat("alpha", 0.01f)}};
  if (op == "HardSigmoid")
    return MatchedActivation{op, {node->GetFloat("alpha", 0.2f), node->GetFloat("beta", 0.5f)}};
  if (op == "Gelu" && allow_gelu) {
    const std::string approximate = node->GetString("approximate", "none");
    if (approximate == "none") return MatchedActivation{"Gelu", {}};
    if (approximate == "tanh") return MatchedActivation{"GeluTanh", {}};
    return std::nullopt;
  }
  if (op == "Clip")
    if (std::optional<std::vector<float>> limits = ClipLimits(graph, *node)) return MatchedActivation{op, *limits};
  return std::nullopt;
}

void SetActivationAttributes(Node& fused, const MatchedActivation& activation) {
  fused.attributes["activation"] = StringAttribute("activation", activation.name);
  Attribute params;
  params.name = "activation_params";
  params.type = Attribute::Type::kFloats;
  params.floats = activation.params;
  fused.attributes["activation_params"] = std::move(params);
}

}  // namespace tessera
