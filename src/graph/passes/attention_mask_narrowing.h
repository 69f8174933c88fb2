// Computes an ai.tessera::Attention mask at the shape it varies over instead of its broadcast (level all, after
// attention_fusion). Every EP's Attention kernel reads the mask through strides that broadcast it to [batch, heads,
// queries, keys] (attention_geometry.h), so a mask that only repeats a narrower value need not be materialized.
// Hugging Face's exports build the padding mask of an encoder so:
//
//   row = Reshape(Cast(attention_mask, bool), [B, 1, 1, K])
//   wide = Expand(And(all_true [1, 1, Q, 1], row), [B, 1, Q, K])
//   mask = Where(wide, 0, -65504)                         -> Attention(..., mask) in every layer
//
// which costs an And, an Expand and a Where over B x Q x K elements per run and a row-per-query mask read in every
// layer. After the pass: mask = Where(row, 0, -65504), [B, 1, 1, K], which the kernels read as one row per batch
// entry (BERT-base at 128 tokens, float16, H200: two launches fewer per run).
//
// Rewrites, repeated until none applies, for a mask value read only as the mask of Attention nodes:
//  - the mask is Expand(x, shape), or And(x, c) / Or(x, c) with c a constant of all true / all false: read x;
//  - the mask is Where(w, a, b) with one-element a and b (or Cast(w) / Not(w)), and w, read only there, is such a
//    broadcast of x: the Where (Cast, Not) reads x, and its output's shape follows.
// Only the query and key axes may narrow: the batch and heads axes of x (aligned to rank 4) must equal the mask's,
// which takes part in the batch and heads the kernel computes; both shapes must be known.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of rewrites.
size_t NarrowAttentionMasks(Graph& graph);

}  // namespace tessera
