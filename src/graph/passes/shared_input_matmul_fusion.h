// Merges products that read the same activations with different constant weights into one product (level all,
// after matmul_epilogue_fusion):
//
//   y_i = MatMul(x, B_i)  or  FusedMatMul(x, B_i, bias_i?)      (i = 1..n, n >= 2, same attributes)
//   ->  y = FusedMatMul|MatMul(x, [B_1 | ... | B_n], [bias_1 | ... | bias_n]);  y_1..y_n = Split(y, axis -1)
//
// The query, key and value projections of an attention block become one product of three times the width:
// wider products fill the device better than three narrow ones (BERT-base at 128 tokens: 768 columns each), and
// two launches (product, split) replace three. The B_i are 2-D constants of one element type and row count; the
// biases (all present or all absent) 1-D constants of B_i's width; FusedMatMul has no addend and the same alpha
// and activation in every product. The concatenated weights replace the separate ones (which go when nothing else
// reads them). The EP that would run the first product must have FusedMatMul (for MatMul: MatMul) and Split
// (`can_fuse`).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of products merged away (n - 1 per group).
size_t FuseSharedInputMatMuls(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
