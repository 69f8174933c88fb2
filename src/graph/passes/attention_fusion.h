// Fuses scaled dot-product attention into one ai.tessera::Attention node (level all):
//
//   q' = [Mul(] [Transpose(] q [)] [, c_q)]          k' = [Mul(] [Transpose(] k [)] [, c_k)]
//   s  = MatMul(q', k')  [Div or Mul by a scalar constant]
//   a  = s [+ mask]                        mask: a tensor of the attention's type, or Where(cond, 0, -inf) of a
//                                          Boolean `cond` (absorbed: the fused node reads `cond`)
//   p  = Softmax(a, last axis)  [Where(IsNaN(p), 0, p)]
//   o  = MatMul(p, [Transpose(] v [)])  [Transpose(o)]
//   ->  ai.tessera::Attention(q, k, v, mask?)
//
// This covers what PyTorch's exporter writes for torch.nn.functional.scaled_dot_product_attention (Hugging
// Face BERT/GPT-2 with the "sdpa" implementation: q and k pre-scaled by sqrt(scale), a Boolean mask through
// Where, NaN rows of fully masked queries zeroed) and the eager implementations (MatMul, Div by sqrt(d), Add of
// an additive mask). The head-splitting Transposes around the matrix products are absorbed as axis maps, so the
// fused node reads the projections in [batch, seq, heads, head_size] as they are and writes its output in the
// layout the absorbed output Transpose gave, ready for the Reshape that merges the heads.
//
// ai.tessera::Attention (opset 1): inputs Q, K, V (rank 4), mask (optional); attributes
//   q_axes, k_axes, v_axes  the axis of each input holding (batch, heads, sequence, head_size), in that order
//   out_axes                the axis of the output receiving each of (batch, heads, q_sequence, v_head_size)
//   scale                   multiplies Q.K (the product of the absorbed scalar factors)
//   masked_rows_zero        1: a row whose scores are all -inf gives zeros (the absorbed IsNaN/Where), else NaN
//   packed_heads            > 0: Q, K and V are views of one tensor whose heads axis holds 3 x packed_heads heads,
//                           Q's first, then K's, then V's (made by graph/passes/packed_qkv_attention.h)
// scores = scale * Q.K^T + mask (numpy broadcasting to [batch, heads, q_seq, k_seq]; a Boolean mask adds 0
// where true and -inf where false), softmax over k_seq, output = softmax . V. Batch and head dims of size 1
// broadcast as MatMul's batch dims do.
//
// graph/passes/cache_update_fusion.h adds the cache-update form (inputs 4-7, outputs 1-2) for a decoding step's
// key/value cache writes.
//
// Conditions: every intermediate is read only by the next node of the pattern (and is not a graph output); the
// types are float or float16 and agree; the matrix products' operands are known to have rank 4 (an absorbed
// Transpose's perm or the value's shape says so); head sizes, where known, are at most 512; the Softmax
// normalizes the last axis; every matched node runs on an EP with the fused kernel (`can_fuse`).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of Attention nodes created.
size_t FuseAttention(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
