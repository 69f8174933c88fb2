// Lets a fused attention read its query, key and value from their merged projection (level all, after
// shared_input_matmul_fusion), so the Split between them goes:
//
//   q, k, v = Split(p, axis -1, [N, N, N])       p = [B, S, 3N]: x times [W_q | W_k | W_v] (+ [b_q | b_k | b_v])
//   q4 = Reshape(q, [b, s, H, D]);  k4, v4 alike, with the same H and D and H * D = N
//   y  = ai.tessera::Attention(q4, k4, v4, mask?)   q_axes = k_axes = v_axes, heads on axis 2, head size on axis 3
//   ->  p4 = Reshape(p, [0, 0, 3H, D]);  y = ai.tessera::Attention(p4, "", "", mask?, qkv_packed = 1)
//
// Why this is the same: since H * D = N, each Reshape turns every row of N elements into one (b, s) pair's
// [H, D] block; p4 turns every row of 3N into one pair's [3H, D] block whose heads are Q's, then K's, then V's.
// Attention with qkv_packed = 1 (graph/passes/attention_fusion.h) reads K and V as the second and third thirds
// of input 0's head axis -- element offsets into one buffer, where the Split copied 3 x [B, S, N] apart.
//
// Conditions: the Split's sizes are three equal constants N (or the attribute), along axis -1; each of its
// outputs is read by its Reshape and otherwise only by Shape nodes whose results are only indexed at dims 0 or 1
// by Gather (exporters' size queries; they read p instead, whose dims 0 and 1 are the same), and is not a graph
// output; the Reshape targets are 4 entries whose first two keep the input's first two dims (0, or
// Unsqueeze(Gather(Shape(t), j)) at entry j, t one of the Split's outputs or its input: PyTorch's
// `view(batch, seq, heads, head_size)`) and whose last two are constants H and D, read from an initializer or a
// Concat of one-element constants; allowzero 0; the Attention has no cache-update inputs; the EP running the
// Attention has Reshape (`can_fuse`).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of Attention nodes that now read a packed projection.
size_t PackAttentionProjections(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
