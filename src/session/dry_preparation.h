// Whether a session's preparation run may be dry (KernelContext::preparing_only): a run on zeros at creation in
// which convolutions build their primitives and pack their weights but do not compute, their outputs zero-filled.
//
// The run must still meet every shape a real run with those input shapes meets, so every node of the graph must
// produce output shapes that follow from its input shapes, attributes and constant inputs alone: an allowlist of
// operators, with the inputs that carry shapes or sizes (Reshape's shape, Slice's starts, Resize's sizes, ...)
// required to be initializers. Control flow, operators with data-dependent output shapes (NonZero, Unique,
// NonMaxSuppression, Range, ...) and integer division (a zero from a skipped convolution could reach a divisor)
// make the run a full one.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

bool AllowsDryPreparation(const Graph& graph);

}  // namespace tessera
