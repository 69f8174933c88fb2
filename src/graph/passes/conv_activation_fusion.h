// Fuses a Conv with what follows it into ai.tessera::FusedConv (level all):
//
//   Conv -> Act                 ->  FusedConv(X, W, B, activation=Act)
//   Conv -> Add(other) [-> Act] ->  FusedConv(X, W, B, Z=other, activation=Act)
//
// Act is one of Relu, LeakyRelu, Clip (limits from attributes before opset 11, from constant inputs since),
// Sigmoid, HardSigmoid, HardSwish, Tanh, or SiLU written as v * Sigmoid(v) (YOLO-style detectors; fused as
// Swish with alpha 1); its parameters go to `activation_params` (LeakyRelu [alpha], Clip [min, max],
// HardSigmoid [alpha, beta], Swish [alpha]). Every intermediate must be read only inside the pattern, and
// the EP that would run the Conv must have a FusedConv kernel (`can_fuse`). Z is added before the activation;
// the kernel requires Z to broadcast to the Conv output's shape (always true for residual connections).
// The fused node replaces the pattern's last node, in its position, so everything it reads is produced before.
//
// ConvTranspose -> Act becomes ai.tessera::FusedConvTranspose(X, W, B, activation=Act) the same way (no residual:
// a following Add stays a node), where the EP has a kernel for it (the CPU EP: the activation on each output row
// while it is in cache, or as a oneDNN post-op).
//
// A Clip with constant limits right after Act (read only by it) goes in too, as attribute activation_clip = [min,
// max] (StyleGAN-style generators clamp every activation: MI-GAN's LeakyRelu -> Clip(-256, 256)), where the EP
// that would run the convolution has a kernel for the node with that extension attribute (`can_run`; the CPU EP);
// elsewhere the Clip stays a node.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of FusedConv and FusedConvTranspose nodes created.
size_t FuseConvActivation(Graph& graph, const CanFuse& can_fuse, const CanRun& can_run = {});

}  // namespace tessera
