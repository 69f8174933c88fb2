// Fuses SiLU as exporters write it, v * Sigmoid(v) (operands in either order), into com.microsoft QuickGelu with
// alpha = 1 (x * sigmoid(alpha * x); level all). It runs after conv_activation_fusion, which takes the SiLU that
// follows a convolution into its epilogue; what it fuses is the rest (after dequantizing Mul/Add chains, in
// transformer MLPs). The Sigmoid's output must be read by the Mul alone and the EP that would run the Mul must
// have a QuickGelu kernel (`can_fuse`: CPU and CUDA). One pass over the tensor instead of two, and no
// intermediate.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of QuickGelu nodes created.
size_t FuseSilu(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
