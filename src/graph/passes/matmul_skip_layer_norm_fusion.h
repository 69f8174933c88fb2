// Fuses a product that only a SkipLayerNormalization reads into ai.tessera::MatMulSkipLayerNormalization (level all):
//
//   p = MatMul(A, B)                                          B a 2-D initializer [K, N]
//   y = SkipLayerNormalization(p, skip, gamma, beta?, bias?)  [ai.tessera or com.microsoft; p as input or skip]
//   ->  y = ai.tessera::MatMulSkipLayerNormalization(A, B, skip, gamma, beta?, bias?, epsilon)
//
// y = LayerNorm((A x B + bias) + skip) * gamma + beta over the last axis, the sum in float32 (SkipLayerNormalization's
// default arithmetic; the product is not rounded to float16 before it is added). The point is the CUDA kernel
// (providers/cuda/kernels/skip_layer_norm_ops.cc): a deep product with few output tiles (a transformer's FFN output
// at batch 1) is computed in depth chunks whose float32 partial sums the normalization adds up, in place of
// cuBLAS's split-K reduction kernel. Only EPs that prefer the op fuse (`can_fuse`, asked for both nodes): the CUDA EP
// (not in strict mode); the CPU EP has a kernel for graphs that hold the op but keeps the two nodes.
//
// Conditions: A and B float or float16; p is read by the SkipLayerNormalization alone and is not a graph output; the
// SkipLayerNormalization names no output besides 0 (mean, inv_std_var, and the sum a pre-LN transformer's residual
// stream reads, keep it unfused).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of MatMulSkipLayerNormalization nodes created.
size_t FuseMatMulSkipLayerNorm(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
