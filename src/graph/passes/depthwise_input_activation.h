// Moves a convolution's Clip or Relu activation into the depthwise convolution that alone reads its output
// (level all, after nchwc_layout):
//
//   P = NchwcConv(..., activation = Clip(lo, hi))  ->  D = NchwcConv(P, W, ...) depthwise
//   becomes
//   P' = NchwcConv(...) without the activation      ->  D' = ActivatedNchwcConv(P', W, ..., input_activation = Clip(lo, hi))
//
// ai.tessera::ActivatedNchwcConv is NchwcConv applied to activation(X). A CUDA EP runs P's convolution with its bias
// in one cuDNN call when no activation other than Relu follows (MobileNetV2's expansion convolutions are 1x1
// products whose ReLU6 cost one more epilogue launch each), and its depthwise kernel applies the activation to
// each input it loads at no extra memory traffic: MobileNetV2 loses 17 launches. Only EPs that prefer the fused
// op (`can_fuse`: the CPU EP runs it, but does not ask for it) get the rewrite.
//
// The rewrite is exact: Relu and a Clip whose limits are float16 values commute with rounding to float16 or
// float32 (rounding is monotone and keeps those limits), so activation(round(z)) = round(activation(z)); the
// depthwise convolution pads the activated X with zeros, and ActivatedNchwcConv pads it the same way (taps outside X
// count as zeros, not as activation(0)). P's output must be read by D alone (not a graph output, not a subgraph's),
// D must be 2-D depthwise (group = channels, W [C, 1, R, S]) without an input activation yet.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of ActivatedNchwcConv nodes created.
size_t FuseDepthwiseInputActivation(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
