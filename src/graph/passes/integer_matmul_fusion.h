// Fuses the dequantizing tail of a dynamically quantized product into com.microsoft MatMulIntegerToFloat
// (level all), the pattern onnxruntime.quantization's dynamic quantizer writes for every MatMul:
//
//   s = Mul(a_scale, b_scale)                                  (either operand order)
//   y = Mul(Cast<float>(MatMulInteger(A, B, a_zero, b_zero)), s)  [-> Add(y, bias)]
//     -> MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero, b_zero[, bias])
//
// One scale is a scalar (it becomes a_scale), the other a scalar or a [N] vector (per output column); the
// optional bias is a float constant [N]. The kernel computes float(sum) * (a_scale * b_scale) [+ bias] with
// the same roundings as the three nodes it replaces (products commute exactly), so results are unchanged;
// what goes is the int32 intermediate and two elementwise passes. The Cast and the product Mul must be read
// only inside the pattern (the scale Mul may have other readers and then stays), and the EP that would run
// the product must have the fused kernel (`can_fuse`).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of MatMulIntegerToFloat nodes created.
size_t FuseIntegerMatMulToFloat(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
