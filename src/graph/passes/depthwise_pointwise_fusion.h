// Fuses a depthwise convolution into the pointwise convolution that alone reads it (level all), as MobileNet-style
// blocks write them (depthwise 3 x 3 -> activation -> 1 x 1 projection [+ residual]):
//
//   D = Conv | FusedConv(X, W_dw, B_dw?)           W_dw [C, 1, R, S] with group = C; D's activation a_dw; no residual
//   Y = Conv | FusedConv(D, W_pw, B_pw?, Z?)       W_pw [K, C, 1, 1], group 1, strides 1, no padding; activation a
//   ->  ai.tessera::DepthwisePointwiseConv(X, W_dw, B_dw, W_pw, B_pw, Z)
//
// ai.tessera::DepthwisePointwiseConv (opset 1): Y = a(W_pw . a_dw(depthwise(X) + B_dw) + B_pw + Z), 2-D (NCHW) only.
//   inputs   X [N, C, H, W]; W_dw [C, 1, R, S]; B_dw [C] (optional, ""); W_pw [K, C, 1, 1]; B_pw [K] (optional);
//            Z (optional: broadcasts to Y [N, K, OH, OW], added before the activation, as FusedConv's)
//   attributes  kernel_shape, strides, pads, dilations, auto_pad: the depthwise window (Conv's meanings);
//            depthwise_activation / depthwise_activation_params: a_dw; activation / activation_params: a
//            (tessera/ep/fused_activation.h)
// An EP's kernel computes the depthwise output inside the pointwise product (the Vulkan EP: the 1 x 1 product's
// operand is the depthwise value, evaluated while it is staged), so D never reaches memory and the pair is one
// dispatch. Conditions: both weights are constants of those shapes, D's output is read by Y alone (not a graph
// output, not read by a subgraph), and the EP that would run Y has the kernel and prefers it (`can_fuse`: the Vulkan
// EP; the CPU EP declines -- oneDNN runs the two convolutions faster than its reference kernel).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of DepthwisePointwiseConv nodes created.
size_t FuseDepthwisePointwise(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
