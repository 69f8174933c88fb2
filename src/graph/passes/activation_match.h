// Recognizing an activation node that a fused node (FusedConv, FusedMatMul) can apply itself, written as
// the fused node's `activation` / `activation_params` attributes (see graph/fused_activation.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tessera/ep/graph.h"

namespace tessera {

struct MatchedActivation {
  std::string name;           // Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Gelu, GeluTanh, Swish
  std::vector<float> params;  // LeakyRelu [alpha], Clip [min, max], HardSigmoid [alpha, beta], Swish [alpha]
};

// The activation `node` computes from its first input, or nullopt when it is not one a fused node can take:
// not an activation, a Clip whose limits are not constants, or a Gelu unless `allow_gelu`.
std::optional<MatchedActivation> MatchActivation(const Graph& graph, const Node* node, bool allow_gelu);

// Writes `activation` as the fused node's `activation` and `activation_params` attributes.
void SetActivationAttributes(Node& fused, const MatchedActivation& activation);

}  // namespace tessera
