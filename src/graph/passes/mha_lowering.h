// Lowers com.microsoft MultiHeadAttention onto ai.tessera::Attention where an EP has that kernel and prefers it
// (level all): the CUDA EP's tensor-core attention and the CPU EP's fused kernel then serve models ONNX Runtime's
// transformer optimizer wrote, instead of the CPU EP's reference MultiHeadAttention.
//
//   MultiHeadAttention(query [B, S, D], key [B, L, D], value [B, L, Dv], bias?, key_padding_mask?, attention_bias?)
//   -> q = Reshape(query (+ bias_q), [0, 0, N, D / N]), k and v likewise (bias slices folded into initializers)
//      o = ai.tessera::Attention(q, k, v, mask?)   axes (batch, heads, sequence, head) = (0, 2, 1, 3)
//      output = Reshape(o, [0, 0, Dv])
//
// Only that form is lowered: 3-D query, key and value of known last dims, a constant bias (or none), a key padding
// mask of the [B, T] or [B, S, T] forms (or none), no past inputs or present outputs, unidirectional 0, float32 or
// float16. Everything else keeps the MultiHeadAttention node (the CPU EP's kernel runs it). The scale is the node's,
// or 1/sqrt(D / N). The fused op's additive mask is the attention_bias [B or 1, N or 1, S, T] plus
// mask_filter_value where the padding mask is 0 (Equal / Cast / Mul / Unsqueeze on the small mask), as the
// MultiHeadAttention kernel adds them.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// `fused_op_preferred(op_type, domain)`: whether the EP that would run the new ai.tessera::Attention (the first in
// priority order with that kernel, whichever EP runs the MultiHeadAttention now) prefers it
// (OptimizerContext::fused_op_preferred). Returns the number of MultiHeadAttention nodes lowered.
using FusedOpPreferred = std::function<bool(const std::string& op_type, const std::string& domain)>;
size_t LowerMultiHeadAttention(Graph& graph, const FusedOpPreferred& fused_op_preferred);

}  // namespace tessera
