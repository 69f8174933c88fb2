// Out-of-line parts of the graph IR: typed attribute access, descriptions, topological sorting and
// outer-scope analysis.
#include "tessera/ep/graph.h"

#include <functional>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tessera/status.h"

namespace tessera {

namespace {

const char* AttributeTypeName(Attribute::Type type) {
  switch (type) {
    case Attribute::Type::kUndefined: return "undefined";
    case Attribute::Type::kFloat: return "float";
    case Attribute::Type::kInt: return "int";
    case Attribute::Type::kString: return "string";
    case Attribute::Type::kTensor: return "tensor";
    case Attribute::Type::kGraph: return "graph";
    case Attribute::Type::kFloats: return "floats";
    case Attribute::Type::kInts: return "ints";
    case Attribute::Type::kStrings: return "strings";
    case Attribute::Type::kTensors: return "tensors";
    case Attribute::Type::kGraphs: return "graphs";
    case Attribute::Type::kTypeProto: return "type_proto";
  }
  return "unknown";
}

// The attribute `key` when present with type `expected`; nullptr when absent; throws on a mismatch.
const Attribute* FindTyped(const Node& node, const std::string& key, Attribute::Type expected) {
  auto it = node.attributes.find(key);
  if (it == node.attributes.end()) return nullptr;
  if (it->second.type != expected)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": attribute '", key, "' is of type ",
         AttributeTypeName(it->second.type), ", expected ", AttributeTypeName(expected));
  return &it->second;
}

const Attribute& RequireTyped(const Node& node, const std::string& key, Attribute::Type expected) {
  const Attribute* attribute = FindTyped(node, key, expected);
  if (!attribute)
    Fail(ErrorCode::kInvalidModel, node.Describe(), ": required attribute '", key, "' (", AttributeTypeName(expected),
         ") is missing");
  return *attribute;
}

// Calls fn(subgraph) for every graph held by the node's GRAPH and GRAPHS attributes.
template <typename Fn>
void ForEachSubgraph(const Node& node, Fn&& fn) {
  for (const auto& [key, attribute] : node.attributes) {
    if (attribute.g) fn(*attribute.g);
    for (const auto& graph : attribute.graphs)
      if (graph) fn(*graph);
  }
}

// Values that exist before any node runs: graph inputs and initializers.
std::unordered_set<std::string> SourceNames(const Graph& graph) {
  std::unordered_set<std::string> sources;
  for (const ValueInfo& input : graph.inputs) sources.insert(input.name);
  for (const auto& [name, tensor] : graph.initializers) sources.insert(name);
  return sources;
}

// Names the graph defines itself: inputs, initializers and node outputs.
std::unordered_set<std::string> DefinedNames(const Graph& graph) {
  std::unordered_set<std::string> defined = SourceNames(graph);
  for (const auto& node : graph.nodes)
    for (const std::string& output : node->outputs)
      if (!output.empty()) defined.insert(output);
  return defined;
}

// Every value the node reads: its explicit inputs plus what its subgraphs read from enclosing scopes.
std::vector<std::string> ValuesReadBy(const Node& node) {
  std::vector<std::string> reads;
  for (const std::string& input : node.inputs)
    if (!input.empty()) reads.push_back(input);
  ForEachSubgraph(node, [&](const Graph& subgraph) {
    for (const std::string& name : subgraph.OuterScopeReferences()) reads.push_back(name);
  });
  return reads;
}

}  // namespace

std::string ValueInfo::ShapeString() const {
  if (!shape) return "?";
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim& dim = (*shape)[i];
    if (i) os << ',';
    if (dim.is_concrete())
      os << dim.value;
    else if (!dim.symbol.empty())
      os << dim.symbol;
    else
      os << '?';
  }
  os << ']';
  return os.str();
}

int64_t Node::GetInt(const std::string& key, int64_t fallback) const {
  const Attribute* attribute = FindTyped(*this, key, Attribute::Type::kInt);
  return attribute ? attribute->i : fallback;
}
int64_t Node::GetInt(const std::string& key) const { return RequireTyped(*this, key, Attribute::Type::kInt).i; }

float Node::GetFloat(const std::string& key, float fallback) const {
  const Attribute* attribute = FindTyped(*this, key, Attribute::Type::kFloat);
  return attribute ? attribute->f : fallback;
}
float Node::GetFloat(const std::string& key) const { return RequireTyped(*this, key, Attribute::Type::kFloat).f; }

std::string Node::GetString(const std::string& key, const std::string& fallback) const {
  const Attribute* attribute = FindTyped(*this, key, Attribute::Type::kString);
  return attribute ? attribute->s : fallback;
}
std::string Node::GetString(const std::string& key) const {
  return RequireTyped(*this, key, Attribute::Type::kString).s;
}

std::vector<int64_t> Node::GetInts(const std::string& key, std::vector<int64_t> fallback) const {
  const Attribute* attribute = FindTyped(*this, key, Attribute::Type::kInts);
  return attribute ? attribute->ints : fallback;
}
std::vector<float> Node::GetFloats(const std::string& key, std::vector<float> fallback) const {
  const Attribute* attribute = FindTyped(*this, key, Attribute::Type::kFloats);
  return attribute ? attribute->floats : fallback;
}
std::vector<std::string> Node::GetStrings(const std::string& key, std::vector<std::string> fallback) const {
  const Attribute* attribute = FindTyped(*this, key, Attribute::Type::kStrings);
  return attribute ? attribute->strings : fallback;
}

const Tensor& Node::GetTensor(const std::string& key) const {
  return RequireTyped(*this, key, Attribute::Type::kTensor).t;
}

const Graph& Node::GetGraph(const std::string& key) const {
  const Attribute& attribute = RequireTyped(*this, key, Attribute::Type::kGraph);
  if (!attribute.g) Fail(ErrorCode::kInvalidModel, Describe(), ": graph attribute '", key, "' is empty");
  return *attribute.g;
}

std::ostream& operator<<(std::ostream& os, const Node& node) { return os << node.Describe(); }

std::string Node::Describe() const {
  std::ostringstream os;
  os << op_type << " '" << name << "' (";
  if (!domain.empty()) os << domain << ' ';
  os << "opset " << opset << ')';
  return os.str();
}

size_t Node::NumInputs() const {
  size_t count = inputs.size();
  while (count > 0 && inputs[count - 1].empty()) --count;
  return count;
}

// Kahn's algorithm with a min-heap of file positions: among the nodes whose inputs are ready, the one
// that comes first in the file runs first, so an already sorted graph keeps its order.
void Graph::TopologicalSort(const std::set<std::string>& outer_scope) {
  const std::unordered_set<std::string> sources = SourceNames(*this);
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& output : nodes[i]->outputs) {
      if (output.empty()) continue;
      if (!producer.emplace(output, i).second)
        Fail(ErrorCode::kInvalidModel, "graph '", name, "': value '", output, "' is produced by both ",
             nodes[producer[output]]->Describe(), " and ", nodes[i]->Describe());
      if (sources.count(output))
        Fail(ErrorCode::kInvalidModel, "graph '", name, "': ", nodes[i]->Describe(), " writes '", output,
             "', which is already a graph input or initializer");
    }
  }
  const std::unordered_set<std::string> defined = DefinedNames(*this);
  std::vector<std::vector<size_t>> consumers(nodes.size());
  std::vector<size_t> pending(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& value : ValuesReadBy(*nodes[i])) {
      auto it = producer.find(value);
      if (it != producer.end()) {
        consumers[it->second].push_back(i);
        ++pending[i];
      } else if (!defined.count(value) && !outer_scope.count(value)) {
        Fail(ErrorCode::kInvalidModel, "graph '", name, "': ", nodes[i]->Describe(), " reads '", value,
             "', which no node, graph input, initializer or enclosing graph defines");
      }
    }
  }
  for (const ValueInfo& output : outputs)
    if (!defined.count(output.name) && !outer_scope.count(output.name))
      Fail(ErrorCode::kInvalidModel, "graph '", name, "': output '", output.name, "' is not defined by any node");

  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t consumer : consumers[i])
      if (--pending[consumer] == 0) ready.push(consumer);
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] != 0)
        Fail(ErrorCode::kInvalidModel, "graph '", name, "': ", nodes[i]->Describe(),
             " is part of a cycle (or depends on one)");
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
}

std::set<std::string> Graph::OuterScopeReferences() const {
  const std::unordered_set<std::string> defined = DefinedNames(*this);
  std::set<std::string> references;
  auto note = [&](const std::string& value) {
    if (!value.empty() && !defined.count(value)) references.insert(value);
  };
  for (const auto& node : nodes)
    for (const std::string& value : ValuesReadBy(*node)) note(value);
  for (const ValueInfo& output : outputs) note(output.name);
  return references;
}

const ValueInfo* Graph::FindValueInfo(const std::string& value) const {
  for (const Graph* graph = this; graph; graph = graph->parent) {
    auto it = graph->value_infos.find(value);
    if (it != graph->value_infos.end()) return &it->second;
  }
  return nullptr;
}

DataType Graph::TypeOf(const std::string& value) const {
  for (const Graph* graph = this; graph; graph = graph->parent) {
    auto info = graph->value_infos.find(value);
    if (info != graph->value_infos.end() && info->second.type != DataType::kUndefined) return info->second.type;
    auto initializer = graph->initializers.find(value);
    if (initializer != graph->initializers.end()) return initializer->second.type();
  }
  return DataType::kUndefined;
}

bool Graph::IsGraphInput(const std::string& value) const {
  for (const ValueInfo& input : inputs)
    if (input.name == value) return true;
  return false;
}

bool Graph::IsGraphOutput(const std::string& value) const {
  for (const ValueInfo& output : outputs)
    if (output.name == value) return true;
  return false;
}

}  // namespace tessera
