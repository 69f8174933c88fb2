// Replaces shape computations with constants where shapes are static (level extended):
//   - Shape(x) becomes an int64 constant when x's ValueInfo shape is fully concrete (graph inputs with
//     concrete dims, or values the model annotates in value_info); Shape-15's start/end are honoured;
//   - Gather(Shape(x), constant indices) (axis 0) becomes a constant when the dims it picks are concrete,
//     even if other dims of x are symbolic (e.g. the hidden size of [batch, sequence, 768]).
//   - Reshape(x, Concat(..., Unsqueeze(Gather(Shape(x), i)), ...)), x's own dim i at position i of the target and
//     the other parts constant, reads a constant target with 0 there (allowzero = 0: Reshape copies x's dim), whatever
//     x's dims are: the head-splitting and -merging Reshapes of transformer exports over symbolic batch and sequence.
// The Shape/Gather nodes whose outputs became constants are removed; the optimizer then runs constant
// folding and dead-node elimination again, which removes the Unsqueeze/Concat chains that fed Reshape.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

// Returns the number of nodes replaced by constants plus the number of Reshape targets made constant.
size_t EliminateShapeSubgraphs(Graph& graph);

}  // namespace tessera
