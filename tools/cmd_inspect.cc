// `tessera inspect MODEL`: what a model file contains, without creating a session (so it works for
// models no registered EP can run).
#include <algorithm>
#include <iostream>

#include "cli_args.h"
#include "commands.h"
#include "graph/model_loader.h"
#include "table.h"
#include "tessera/tessera.h"

namespace tessera::cli {
namespace {

constexpr const char* kInspectUsage =
    "usage: tessera inspect MODEL\n"
    "Prints the model's metadata, opset imports, inputs and outputs (types, symbolic shapes) and an op histogram.\n";

std::string TypeString(const ValueInfo& info) {
  const std::string element = info.type == DataType::kUndefined ? "?" : DataTypeName(info.type);
  switch (info.kind) {
    case ValueInfo::Kind::kTensor: return "tensor(" + element + ")";
    case ValueInfo::Kind::kSequence: return "seq(tensor(" + element + "))";
    case ValueInfo::Kind::kOptional: return "optional(" + element + ")";
    case ValueInfo::Kind::kUnknown: break;
  }
  return "?";
}

void PrintValues(const char* title, const std::vector<ValueInfo>& values) {
  Table table({"name", "type", "shape"});
  for (const ValueInfo& info : values) table.AddRow({info.name, TypeString(info), info.ShapeString()});
  std::cout << "\n" << title << "\n";
  table.Print(std::cout);
}

void PrintMetadata(const Model& model) {
  std::cout << "Model: " << model.path.string() << "\n"
            << "  ir_version:     " << model.ir_version << "\n"
            << "  producer:       " << model.producer_name
            << (model.producer_version.empty() ? "" : " " + model.producer_version) << "\n"
            << "  domain:         " << model.domain << "\n"
            << "  model_version:  " << model.model_version << "\n"
            << "  graph:          " << model.graph_name << "\n";
  if (!model.doc_string.empty()) std::cout << "  doc:            " << model.doc_string << "\n";
  for (const auto& [key, value] : model.metadata) std::cout << "  meta " << key << " = " << value << "\n";
  std::cout << "  opsets:        ";
  for (const auto& [domain, version] : model.opsets)
    std::cout << " " << (domain.empty() ? "ai.onnx" : domain) << ":" << version;
  std::cout << "\n";
}

// Op counts keyed by "domain::op" (ONNX ops without a domain prefix), nested subgraphs included.
void CountOps(const Graph& graph, std::map<std::string, int>& counts, int& subgraph_nodes, bool nested) {
  for (const auto& node : graph.nodes) {
    ++counts[node->domain.empty() ? node->op_type : node->domain + "::" + node->op_type];
    if (nested) ++subgraph_nodes;
    for (const auto& [name, attribute] : node->attributes) {
      if (attribute.g) CountOps(*attribute.g, counts, subgraph_nodes, true);
      for (const auto& g : attribute.graphs)
        if (g) CountOps(*g, counts, subgraph_nodes, true);
    }
  }
}

void PrintOpHistogram(const Graph& graph) {
  std::map<std::string, int> counts;
  int subgraph_nodes = 0;
  CountOps(graph, counts, subgraph_nodes, false);
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  Table table({"op", "count"});
  table.RightAlign({1});
  for (const auto& [op, count] : sorted) table.AddRow({op, std::to_string(count)});
  std::cout << "\nNodes: " << graph.nodes.size() << " in the main graph";
  if (subgraph_nodes > 0) std::cout << ", " << subgraph_nodes << " in subgraphs";
  std::cout << "\n";
  table.Print(std::cout);
}

void PrintInitializers(const Graph& graph) {
  size_t bytes = 0;
  for (const auto& [name, tensor] : graph.initializers)
    if (tensor.type() != DataType::kString) bytes += tensor.SizeInBytes();
  std::cout << "\nInitializers: " << graph.initializers.size() << " (" << bytes << " bytes)\n";
}

}  // namespace

int InspectCommand(std::span<const std::string> args) {
  const ParsedArgs parsed = ParseArgs(args, {}, {});
  if (parsed.Has("--help")) {
    std::cout << kInspectUsage;
    return 0;
  }
  if (parsed.positional.size() != 1) throw UsageError("inspect takes exactly one MODEL");
  std::unique_ptr<Model> model = LoadModel(parsed.positional[0]);
  PrintMetadata(*model);
  PrintValues("Inputs", model->graph->inputs);
  PrintValues("Outputs", model->graph->outputs);
  PrintInitializers(*model->graph);
  PrintOpHistogram(*model->graph);
  return 0;
}

}  // namespace tessera::cli
