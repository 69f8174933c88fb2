// Concat(..., Split(x)[0], Split(x)[1], ..., Split(x)[n-1], ...) -> Concat(..., x, ...) (level all, last): a Concat
// that reads every output of a Split in order, along the Split's axis, reads the Split's input instead. The Split
// then often has one output left with readers; it becomes a Slice of that part, and a Split with none is removed.
//
// YOLOv8 / YOLO11's C2f and C3k2 blocks are this shape: y = Split(cv1(x)) into halves a, b; b feeds the bottleneck
// convolutions; cv2(Concat(a, b, bottleneck outputs...)). Half of each Split's copy goes away, and the Concat copies
// one larger piece per pixel instead of two. Exact (the same elements move); runs after nchwc_layout, whose blocked
// Split / Concat it handles like any other (the Split's sizes are the blocked ones then). Needs the Split's sizes:
// its constant `split` input or attribute, or equal parts of an axis whose size the value's shape states.
#pragma once

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// Returns the number of Concat inputs replaced (each a run of one Split's outputs).
size_t EliminateSplitConcat(Graph& graph);

}  // namespace tessera
