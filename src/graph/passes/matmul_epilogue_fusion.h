// Fuses a float or float16 MatMul with the elementwise work that follows it into ai.tessera::FusedMatMul (level all):
//
//   MatMul(A, B) [-> Mul|Div(scalar c)] [-> Add(bias)] [-> Act] [-> Add(addend)]
//     ->  FusedMatMul(A, B, bias, addend, alpha = c or 1/c, activation = Act)
//
// computing Y = Act(alpha * (A x B) + bias) + addend in one pass over Y (oneDNN post-ops on the CPU EP).
// bias is a 1-D constant of the product's type with N elements, N being B's last dimension (B a constant or of known last dimension);
// an Add whose other operand is not such a constant, or that follows the activation, is the addend (a residual
// connection, an attention mask). Act is Relu, LeakyRelu, Clip (limits from attributes before opset 11, from
// constant inputs since), Sigmoid, HardSigmoid, HardSwish, Tanh or Gelu; its parameters go to
// `activation_params` as for FusedConv. At least one of the four parts must be present. Every intermediate
// must be read only inside the pattern, and the EP that would run the MatMul must have a FusedMatMul kernel
// (`can_fuse`). The fused node replaces the pattern's last node, in its position.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of FusedMatMul nodes created.
size_t FuseMatMulEpilogue(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
