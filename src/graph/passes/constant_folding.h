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
  // `graph` is the graph holding the node (the main graph or a subgraph); FindConstant(graph, input) gives
  // each input.
  std::function<bool(const Node&, const Graph& graph)> can_evaluate;
  // Computes the node's outputs (host tensors) from its constant inputs.
  std::function<std::vector<Value>(const Node&, const Graph& graph)> evaluate;
};

// Whether the node's results depend on more than its inputs (random generators, whose state advances per run;
// Dropout in training mode): never folded, and a reason not to run a model ahead of the caller.
bool IsNondeterministicOp(const Node& node);

// The constant `value` as `graph` sees it: its own initializer, or (in a subgraph) an initializer of an enclosing
// graph that no graph in between redefines; nullptr when the value is computed or unknown.
const Tensor* FindConstant(const Graph& graph, const std::string& value);

// Folds the graph's nodes whose inputs are all constants (FindConstant: in a subgraph, the enclosing graphs'
// initializers count) into initializers of the graph. Returns the number of nodes folded.
size_t FoldConstants(Graph& graph, const ConstantEvaluator& evaluator);

}  // namespace tessera
