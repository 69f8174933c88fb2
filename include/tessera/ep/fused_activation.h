// EP SDK: the activation a fused node (ai.tessera::FusedConv, written by the conv_activation_fusion pass) applies
// after its main computation: attribute `activation` names an ONNX activation op and `activation_params`
// holds its parameters (LeakyRelu [alpha], Clip [min, max], HardSigmoid [alpha, beta], Swish [alpha]; empty = the
// op's defaults). Swish is x * sigmoid(alpha * x) (alpha 1: SiLU, written by exporters as Sigmoid and Mul). Vendor neutral: every EP's fused kernels read it through ReadFusedActivation.
// Attribute `activation_clip` = [min, max] (with an activation only) clamps the activation's result, a Clip written
// after it (MI-GAN's LeakyRelu -> Clip(-256, 256)); it is an extension attribute (kernel.h kExtensionAttributes):
// only kernels whose KernelDef lists it take such nodes.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

struct FusedActivation {
  enum class Kind { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kHardSigmoid, kHardSwish, kTanh, kGelu, kGeluTanh, kSwish };
  Kind kind = Kind::kNone;
  // LeakyRelu: alpha; Clip: [alpha, beta]; HardSigmoid: alpha * x + beta; Swish: x * sigmoid(alpha * x)
  float alpha = 0.0f, beta = 0.0f;
  // activation_clip: the result clamped to [clamp_min, clamp_max] after the activation.
  bool clamp = false;
  float clamp_min = 0.0f, clamp_max = 0.0f;
};

// The node's activation (kNone without the attribute), with its activation_clip. Throws kInvalidArgument naming
// the node for an unknown activation, a wrong parameter count, or an activation_clip that is not [min <= max] after
// an activation.
FusedActivation ReadFusedActivation(const Node& node);
// The same from attributes `attribute` and `<attribute>_params` (ai.tessera::ActivatedNchwcConv's
// `input_activation` / `input_activation_params`: the activation applied to X before the convolution).
FusedActivation ReadFusedActivation(const Node& node, const std::string& attribute);

}  // namespace tessera
