// Replaces nodes whose inputs are all constant initializers by initializers holding their outputs,
// computed once at session creation. Nodes with subgraphs, random ops and ops the evaluator cannot
// run are left alone.
#pragma once

#include <functional>
#include <vector>

#include "tessera/ep/graph.h"
#include "tessera/value.h"

namespace tessera {

struct ConstantEvaluator {
  // `graph` is the graph holding the node (the main graph or a subgraph); its initializers are the inputs.
  std::function<bool(const Node&, const Graph& graph)> can_evaluate;
  // Computes the node's outputs (host tensors) from its constant inputs.
  std::function<std::vector<Value>(const Node&, const Graph& graph)> evaluate;
};

// Returns the number of nodes folded.
size_t FoldConstants(Graph& graph, const ConstantEvaluator& evaluator);

}  // namespace tessera
