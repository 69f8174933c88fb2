// Fuses the GELU patterns PyTorch emits into Gelu (opset 20 semantics; level extended):
//
//   exact:  y = x * 0.5 * (1 + Erf(x / sqrt(2)))                         ->  Gelu(x)
//   tanh:   y = x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  ->  Gelu(x, approximate="tanh")
//
// Accepted spellings: x / sqrt(2) or x * (1/sqrt(2)); x^3 as Pow(x, 3) or x * x * x (either nesting);
// the final product as (x * (1 + ...)) * 0.5, (x * 0.5) * (1 + ...) or x * ((1 + ...) * 0.5); commutative
// operands in either order. Constants match within a relative 1e-3 (float16 constants do). x must be float or
// float16, every intermediate
// must be read only inside the pattern, and the EP that would run the pattern must have a Gelu kernel
// (`can_fuse`). The fused node has opset max(model opset, 20).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of Gelu nodes created.
size_t FuseGelu(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
