// Element-type propagation: fills Graph::value_infos with the element type (and kind) of every value
// the model does not annotate, from operator rules (Cast's `to`, comparison ops -> bool, Shape ->
// int64, ...; by default outputs take the type of the first typed input). Shapes are not inferred.
// Kernel lookup uses these types for type constraints. Recurses into subgraphs.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

void InferElementTypes(Graph& graph);

}  // namespace tessera
