#include "graph/partitioner.h"

#include <sstream>

#include "core/logging.h"

namespace tessera {

namespace {

[[noreturn]] void FailUnassigned(const Graph& graph, const Node& node, const std::vector<ExecutionProvider*>& eps) {
  std::ostringstream tried;
  bool op_known = false;
  for (size_t i = 0; i < eps.size(); ++i) {
    tried << (i ? ", " : "") << eps[i]->type();
    op_known = op_known || eps[i]->kernels().HasOp(node.op_type, node.domain);
  }
  std::ostringstream types;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    types << (i ? "," : "") << (node.inputs[i].empty() ? "-" : DataTypeName(graph.TypeOf(node.inputs[i])));
  const std::string domain = node.domain.empty() ? "ai.onnx" : node.domain;
  if (op_known)
    Fail(ErrorCode::kNotImplemented, "no kernel for op ", node.op_type, " (domain ", domain, ", opset ", node.opset,
         ") with input types (", types.str(), ") in node '", node.name, "'; execution providers tried: ", tried.str());
  Fail(ErrorCode::kNotImplemented, "op ", node.op_type, " (domain ", domain, ", opset ", node.opset,
       ") is not implemented; needed by node '", node.name, "'; execution providers tried: ", tried.str());
}

}  // namespace

std::vector<ExecutionProvider*> PartitionGraph(const Graph& graph, const std::vector<ExecutionProvider*>& eps) {
  std::vector<ExecutionProvider*> assignment(graph.nodes.size(), nullptr);
  std::set<size_t> unassigned;
  for (size_t i = 0; i < graph.nodes.size(); ++i) unassigned.insert(i);
  for (ExecutionProvider* ep : eps) {
    if (unassigned.empty()) break;
    for (size_t i : ep->GetCapability(graph, unassigned)) {
      if (!unassigned.count(i)) continue;  // an EP may only claim unassigned nodes
      assignment[i] = ep;
      unassigned.erase(i);
    }
  }
  if (!unassigned.empty()) FailUnassigned(graph, *graph.nodes[*unassigned.begin()], eps);
  return assignment;
}

}  // namespace tessera
