// Assigns every node to an execution provider: each EP, in priority order, claims what it can among
// the nodes still unassigned (GetCapability). A node no EP claims fails session creation with an
// error naming the op, its domain and opset, and the node.
#pragma once

#include <vector>

#include "tessera/ep/execution_provider.h"

namespace tessera {

std::vector<ExecutionProvider*> PartitionGraph(const Graph& graph, const std::vector<ExecutionProvider*>& eps);

}  // namespace tessera
