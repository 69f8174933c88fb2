// Fuses a residual Add feeding a LayerNormalization into ai.tessera::SkipLayerNormalization (level all):
//
//   sum = Add(input, skip)                    [or Add(Add(input, bias), skip), bias a constant vector]
//   y   = LayerNormalization(sum, gamma, beta?, axis = -1, epsilon)
//   ->  y, sum = ai.tessera::SkipLayerNormalization(input, skip, gamma, beta?, bias?, epsilon)
//
// The op has the inputs and outputs of ONNX Runtime's com.microsoft::SkipLayerNormalization: outputs
// (output, mean, inv_std_var, input_skip_bias_sum), of which Tessera produces 0 and 3 only. Output 3 is
// set (under the Add's name) when the sum has other readers, as the residual stream of pre-LN transformers
// (GPT-2) does, or is a graph output. Add's operands may broadcast against each other as Add allows; the
// kernels compute sum = (input + bias) + skip in that order, so the sum is the unfused graph's.
//
// Conditions: X of LayerNormalization is float or float16 and produced by a default-domain Add; the
// LayerNormalization normalizes the last axis (-1, or rank - 1 when the rank is known) and names no Mean or
// InvStdDev output; gamma and beta (and the absorbed bias) have X's type and one dimension (a single value
// only when the hidden size is known to be 1), and are available where the Add runs (the fused node takes
// the Add's place, so readers of the sum that come before the LayerNormalization still follow their
// producer). Both nodes must run on an EP with the fused kernel (`can_fuse`, asked for each of them).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of SkipLayerNormalization nodes created.
size_t FuseSkipLayerNorm(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
