#include "graph/fused_activation.h"

#include "tessera/status.h"

namespace tessera {
namespace {

struct ActivationSpec {
  const char* name;
  FusedActivation::Kind kind;
  size_t param_count;
  float default_alpha, default_beta;
};

constexpr ActivationSpec kActivations[] = {
    {"Relu", FusedActivation::Kind::kRelu, 0, 0, 0},
    {"LeakyRelu", FusedActivation::Kind::kLeakyRelu, 1, 0.01f, 0},
    {"Clip", FusedActivation::Kind::kClip, 2, -3.402823466e+38f, 3.402823466e+38f},
    {"Sigmoid", FusedActivation::Kind::kSigmoid, 0, 0, 0},
    {"HardSigmoid", FusedActivation::Kind::kHardSigmoid, 2, 0.2f, 0.5f},
    {"HardSwish", FusedActivation::Kind::kHardSwish, 0, 0, 0},
    {"Tanh", FusedActivation::Kind::kTanh, 0, 0, 0},
    {"Gelu", FusedActivation::Kind::kGelu, 0, 0, 0},
    {"GeluTanh", FusedActivation::Kind::kGeluTanh, 0, 0, 0},
    {"Swish", FusedActivation::Kind::kSwish, 1, 1.0f, 0},
};

}  // namespace

FusedActivation ReadFusedActivation(const Node& node) {
  FusedActivation a = ReadFusedActivation(node, "activation");
  if (!node.HasAttribute("activation_clip")) return a;
  const std::vector<float> limits = node.GetFloats("activation_clip", {});
  if (a.kind == FusedActivation::Kind::kNone)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": activation_clip clamps an activation; the node has none");
  if (limits.size() != 2 || !(limits[0] <= limits[1]))
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": activation_clip must be [min, max] with min <= max, got ",
         limits.size(), " value(s)", limits.size() == 2 ? " with min > max" : "");
  a.clamp = true;
  a.clamp_min = limits[0];
  a.clamp_max = limits[1];
  return a;
}

FusedActivation ReadFusedActivation(const Node& node, const std::string& attribute) {
  const std::string name = node.GetString(attribute, "");
  if (name.empty()) return {};
  const std::vector<float> params = node.GetFloats(attribute + "_params", {});
  for (const ActivationSpec& spec : kActivations) {
    if (name != spec.name) continue;
    if (!params.empty() && params.size() != spec.param_count)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", attribute, " ", name, " takes ", spec.param_count, " ",
           attribute, "_params, got ", params.size());
    FusedActivation a{spec.kind, spec.default_alpha, spec.default_beta};
    if (params.size() > 0) a.alpha = params[0];
    if (params.size() > 1) a.beta = params[1];
    return a;
  }
  Fail(ErrorCode::kInvalidArgument, node.Describe(), ": unsupported ", attribute, " '", name, "'");
}

}  // namespace tessera
