// Fuses the layer normalization PyTorch emits for opsets before 17 into LayerNormalization (level extended):
//
//   mean = ReduceMean(x, axes=[-1])     d = Sub(x, mean)       var = ReduceMean(Pow(d, 2), axes=[-1])
//   y = Add(Mul(Div(d, Sqrt(Add(var, epsilon))), scale), bias)
//   ->  y = LayerNormalization(x, scale, bias, axis=-1, epsilon)
//
// Mul and Add may have their operands in either order; the trailing Add (bias) is optional. The reduction
// must be over the last axis only (written -1, or rank-1 when x's rank is known), scale and bias must be
// float constant vectors (one value per feature), x must be float, and every intermediate must be read only
// inside the pattern. The fused node has opset max(model opset, 17), so the kernel lookup finds
// LayerNormalization-17, and is made only when the EP that would run the pattern has a LayerNormalization
// kernel (`can_fuse`).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of LayerNormalization nodes created.
size_t FuseLayerNorm(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
