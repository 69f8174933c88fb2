// Lets ai.tessera::Attention read the query, key and value heads straight out of one merged projection (level all,
// after shared_input_matmul_fusion):
//
//   y = the merged projection [..., 3 W]          (shared_input_matmul_fusion's product of the three weights)
//   q, k, v = Split(y, axis -1) into three parts of W
//   Attention(Reshape(q, t), Reshape(k, t), Reshape(v, t), mask?)   t = [lead..., H or -1, D], H D = W
//   ->  Attention(z, z, z, mask?, packed_heads = H)    z = Reshape(y, [lead..., 3 H, D])
//
// Part i's head h is y's features [i W + h D, i W + h D + D), which is head i H + h of z: Q, K and V are the
// first, second and last H heads of z (attribute packed_heads, attention_geometry.h). The Split's copy of the whole
// projection goes (BERT-base at 128 tokens: 2.7 us of each layer's ~48 on an H200 in float16); Reshape is a view.
//
// Conditions: the Split has three equal parts along y's last axis (sizes known at creation: its `split` input or
// attribute, or y's stated shape); each part is read only by its Reshape, and each Reshape's output only by the
// Attention, as Q, K and V in that order; the three Reshapes have one constant target of rank 4 (allowzero 0) that
// splits the part's last axis into heads and features: the two leading entries then only regroup rows, the same
// rows of y, whether stated or inferred (at most one -1 in the target); a 0 copies a dim of the part, which must not
// be its last (the part's rank known: y's stated shape, or the input of the product of a 2-D weight that makes y).
// The Attention reads each operand with heads on axis 2 and features on axis 3, has no cache updates and is not
// packed yet; its EP has the fused kernel (`can_fuse`).
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of Attention nodes that now read a packed projection.
size_t PackAttentionProjections(Graph& graph, const CanFuse& can_fuse);

}  // namespace tessera
