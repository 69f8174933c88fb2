// Expands ONNX Runtime's com.microsoft Attention (the fused self-attention its transformer optimizer writes into
// BERT- and GPT-2-style models) into the input projection and a com.microsoft MultiHeadAttention:
//
//   Attention(input, weights, bias?, mask_index?, past?, attention_bias?)     num_heads, qkv_hidden_sizes?, scale?,
//                                                                            mask_filter_value?, unidirectional?
//   -> qkv = MatMul(input, weights)                                          [B, S, Dq + Dk + Dv]
//      q, k, v = Slice(qkv) along the last axis
//      past_key, past_value = Gather(past, 0 / 1, axis 0)                   past [2, B, N, P, H]
//      output, present_key, present_value = MultiHeadAttention(q, k, v, bias, mask_index, attention_bias,
//                                                              past_key, past_value)   (same attributes)
//      present = Concat(Unsqueeze(present_key, 0), Unsqueeze(present_value, 0))        [2, B, N, P + S, H]
//
// The projection then runs on the fastest MatMul an EP has, and the attention where MultiHeadAttention has a kernel.
// The MultiHeadAttention node keeps the Attention's name, so its errors name the model's node. mask_index forms
// MultiHeadAttention takes ([B] lengths, [B, T] and [B, S, T] raw masks) work; the others ([2B] end/start, the 4-D
// form) fail when the node runs, naming it. Refused at creation with kNotImplemented: do_rotary,
// past_present_share_buffer, past_sequence_length, and weights whose split is unknown (no qkv_hidden_sizes and
// weights of unknown shape) or whose query and key widths differ.
//
// A semantic expansion, not an optimization: the session runs it after loading at every optimization level (no EP
// has a kernel for the fused op itself). Subgraphs are expanded too. New values have no element types: run
// InferElementTypes afterwards.
#pragma once

#include <cstddef>

#include "tessera/ep/graph.h"

namespace tessera {

// Returns the number of Attention nodes expanded.
size_t ExpandContribAttention(Graph& graph);

}  // namespace tessera
