#include "graph/passes/graph_optimizer.h"

#include "graph/passes/dead_node_elimination.h"

namespace tessera {

std::vector<PassResult> OptimizeGraph(Graph& graph, OptimizationLevel level, const OptimizerContext& context) {
  std::vector<PassResult> results;
  if (level == OptimizationLevel::kNone) return results;
  results.push_back({"constant_folding", FoldConstants(graph, context.evaluator)});
  results.push_back({"dead_node_elimination", EliminateDeadNodes(graph)});
  return results;
}

}  // namespace tessera
