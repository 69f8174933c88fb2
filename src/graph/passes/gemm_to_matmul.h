// Rewrites the Gemm that PyTorch exports for a Linear layer on more than two dimensions (Hugging Face's Conv1D:
// x.view(-1, K) -> addmm(bias, x, W) -> view(..., N)) back into the product it is (level all):
//
//   Reshape(X -> [-1, K]) -> Gemm(transA 0, transB 0, alpha 1, beta 1; B constant [K, N], C constant [N] or none)
//     -> Reshape(-> X's leading dims + [N])
//   ->  MatMul(X, B) [-> Add(C)]
//
// so that matmul_epilogue_fusion takes the bias together with what follows (GPT-2's GELU, a residual) into one
// FusedMatMul. Conditions: X's shape is known and concrete, the second Reshape's output shape too (from shape
// inference, or a constant target without 0 or -1), the intermediates are read only inside the pattern, and the
// types are float or float16.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of Gemm nodes rewritten.
size_t RewriteReshapedGemm(Graph& graph);

}  // namespace tessera
