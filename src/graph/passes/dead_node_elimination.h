// Removes nodes none of whose outputs reach a graph output (directly, through other nodes, or as an
// outer-scope value read by a subgraph), and initializers nothing reads.
#pragma once

#include "tessera/ep/graph.h"

namespace tessera {

// Returns the number of nodes removed.
size_t EliminateDeadNodes(Graph& graph);

}  // namespace tessera
