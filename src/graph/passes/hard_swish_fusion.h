// Fuses the hard-swish patterns exporters write (PaddlePaddle, Keras, older PyTorch) into HardSwish (opset 14
// semantics, y = x * clip(x + 3, 0, 6) / 6; level extended):
//
//   x * Clip(x + 3, 0, 6) / 6     (Div by 6 or Mul by 1/6, after or before the product with x)
//   x * HardSigmoid(x, alpha = 1/6, beta = 0.5)
//
// Commutative operands in either order; constants within a relative 1e-3. x must be float, every intermediate
// read only inside the pattern, and the EP that would run the pattern must have a HardSwish kernel (`can_fuse`).
// The fused node has opset max(model opset, 14); conv_activation_fusion can then take it into the convolution
// before it. MobileNetV3-style networks lose three or four elementwise nodes per activation.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of HardSwish nodes created.
size_t FuseHardSwish(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
