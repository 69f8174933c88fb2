// Folds an inference BatchNormalization into the Conv or ConvTranspose that feeds it (level extended):
//   y = BN(Conv(x, W, B))  ->  y = Conv(x, W', B')
// with, per output channel c, f = scale[c] / sqrt(var[c] + epsilon), W'[c] = W[c] * f and
// B'[c] = (B[c] - mean[c]) * f + bias[c] (B = 0 when the Conv has none). "W[c]" is every weight that feeds
// output channel c: Conv's W[c, ...]; ConvTranspose's W[ic, c % (C_out / group), ...] for the input channels ic
// of c's group (its W is [C_in, C_out / group, kernel...]).
//
// Applies when W, B and the BN parameters are float32 or float16 constants (computed in float32, stored in W's
// type), the Conv output is read only by the BN,
// and the BN is in inference form (one output; no training_mode). The folded weights are new
// initializers; the old ones stay until dead-node elimination drops them when nothing else reads them.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

// Returns the number of BatchNormalization nodes folded.
size_t FoldConvBatchNorm(Graph& graph);

// Folds a per-channel affine step that follows a Conv or ConvTranspose into it (level extended, after the
// BatchNormalization folding; ONNX Runtime folds the same for Conv):
//   Conv(x, W, B) -> Mul(s)  ->  Conv(x, W * s[c], B * s[c])
//   Conv(x, W, B) -> Add(b)  ->  Conv(x, W, B + b[c])          (Sub(b): B - b[c])
// where s and b are float32 or float16 constants of W's type that broadcast against the Conv's output as one value
// or one value per output channel ([C, 1, ...] / [1, C, 1, ...]), either operand of Mul and Add, the second of Sub.
// PP-LCNet's learnable affine blocks (Conv -> Mul(scalar) -> Add(scalar) -> HardSwish) become one Conv, whose
// activation the later fusions then take. Repeats until nothing folds. Returns the number of nodes folded away.
size_t FoldConvAffine(Graph& graph);

}  // namespace tessera
