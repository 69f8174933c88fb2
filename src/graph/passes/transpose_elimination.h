// Removes redundant Transposes (level extended):
//   Transpose(perm=p2)(Transpose(perm=p1)(x))  ->  Transpose(perm=c)(x), c[i] = p1[p2[i]]
//   a Transpose whose (composed) perm is the identity  ->  nothing (its readers read x directly; an
//   Identity node when its output is a graph output or read by a subgraph)
//   a Transpose that only moves axes of size 1 (the other axes keep their order; input shape fully known)
//     ->  Reshape(x, output dims): the same bytes in the same order (GPT-2's head split of one decoded token)
// Only Transposes with an explicit perm are rewritten (without one the rank would have to be known), and
// the first Transpose of a pair only when the second is its only reader.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

// Returns the number of Transpose nodes removed or merged.
size_t EliminateTransposes(Graph& graph);

}  // namespace tessera
