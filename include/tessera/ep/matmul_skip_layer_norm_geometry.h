// EP SDK: the operand checks and output shape of ai.tessera::MatMulSkipLayerNormalization (made by
// graph/passes/matmul_skip_layer_norm_fusion), shared by every EP's kernel. Inputs (A [..., K], B [K, N], skip,
// gamma, beta?, bias?), all of A's element type; Y = LayerNorm((A x B + bias) + skip) * gamma + beta over the last
// axis, of shape [..., N].
#pragma once

#include "tessera/ep/graph.h"
#include "tessera/shape.h"
#include "tessera/tensor.h"

namespace tessera {

// Y's shape: A's dims but the last, then N. Throws kInvalidArgument naming `node` when A and B do not multiply (A of
// rank >= 1, B 2-D, A's last dim B's first, one element type), when skip, gamma, beta or bias has another type, when
// gamma, beta or bias does not hold N values, or when skip does not broadcast to Y without widening it.
Shape MatMulSkipLayerNormOutput(const Node& node, const Tensor& a, const Tensor& b, const Tensor& skip,
                                const Tensor& gamma, const Tensor* beta, const Tensor* bias);

}  // namespace tessera
