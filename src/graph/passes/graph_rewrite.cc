#include "graph/passes/graph_rewrite.h"

#include <algorithm>
#include <cmath>

namespace tessera {

GraphIndex::GraphIndex(const Graph& graph) : graph_(graph) {
  for (const auto& node : graph.nodes) {
    for (const std::string& out : node->outputs)
      if (!out.empty()) producer_[out] = node.get();
    for (const std::string& in : node->inputs)
      if (!in.empty()) consumers_[in].push_back(node.get());
    for (const auto& [key, attribute] : node->attributes) {
      std::vector<const Graph*> subgraphs;
      if (attribute.g) subgraphs.push_back(attribute.g.get());
      for (const auto& g : attribute.graphs) subgraphs.push_back(g.get());
      for (const Graph* subgraph : subgraphs)
        for (const std::string& name : subgraph->OuterScopeReferences()) {
          consumers_[name].push_back(node.get());
          subgraph_reads_.insert(name);
        }
    }
  }
}

Node* GraphIndex::Producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : it->second;
}

const std::vector<Node*>& GraphIndex::Consumers(const std::string& value) const {
  static const std::vector<Node*> kNone;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNone : it->second;
}

Node* GraphIndex::SoleReader(const std::string& value) const {
  const std::vector<Node*>& readers = Consumers(value);
  return !readers.empty() && OnlyReadBy(value, *readers[0]) ? readers[0] : nullptr;
}

bool GraphIndex::OnlyReadBy(const std::string& value, const Node& reader) const {
  if (graph_.IsGraphOutput(value) || ReadBySubgraph(value)) return false;
  const std::vector<Node*>& readers = Consumers(value);
  if (readers.empty()) return false;
  for (const Node* node : readers)
    if (node != &reader) return false;
  return true;
}

const Tensor* ConstantTensor(const Graph& graph, const std::string& value) {
  auto it = graph.initializers.find(value);
  return it == graph.initializers.end() ? nullptr : &it->second;
}

std::optional<std::vector<int64_t>> StaticDims(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || !info->shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const Dim& d : *info->shape) {
    if (!d.is_concrete()) return std::nullopt;
    dims.push_back(d.value);
  }
  return dims;
}

std::optional<double> ScalarConstant(const Graph& graph, const std::string& value) {
  const Tensor* tensor = ConstantTensor(graph, value);
  if (tensor == nullptr || tensor->NumElements() != 1) return std::nullopt;
  switch (tensor->type()) {
    case DataType::kFloat: return tensor->Data<float>()[0];
    case DataType::kDouble: return tensor->Data<double>()[0];
    case DataType::kFloat16: return ToFloat(tensor->Data<Float16>()[0]);
    case DataType::kBFloat16: return ToFloat(tensor->Data<BFloat16>()[0]);
    case DataType::kInt64: return static_cast<double>(tensor->Data<int64_t>()[0]);
    case DataType::kInt32: return tensor->Data<int32_t>()[0];
    default: return std::nullopt;
  }
}

bool IsScalarConstant(const Graph& graph, const std::string& value, double expected, double tolerance) {
  const std::optional<double> scalar = ScalarConstant(graph, value);
  return scalar && std::abs(*scalar - expected) <= tolerance * std::max(1.0, std::abs(expected));
}

std::optional<size_t> OtherThanScalar(const Graph& graph, const Node& node, double expected, double tolerance) {
  if (node.inputs.size() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i)
    if (IsScalarConstant(graph, node.inputs[i], expected, tolerance)) return 1 - i;
  return std::nullopt;
}

std::string FreshValueName(const Graph& graph, const std::string& base) {
  std::set<std::string> used;
  for (const auto& node : graph.nodes) used.insert(node->outputs.begin(), node->outputs.end());
  auto taken = [&](const std::string& name) {
    return used.count(name) || graph.initializers.count(name) || graph.value_infos.count(name) ||
           graph.IsGraphInput(name);
  };
  if (!taken(base)) return base;
  for (int suffix = 1;; ++suffix) {
    std::string candidate = base + "_" + std::to_string(suffix);
    if (!taken(candidate)) return candidate;
  }
}

std::string NewValues::Fresh(const std::string& base) {
  std::string name = FreshValueName(graph_, base);
  for (int suffix = 1; given_.count(name); ++suffix) name = FreshValueName(graph_, base + "_" + std::to_string(suffix));
  given_.insert(name);
  return name;
}

std::string NewValues::Int64s(const std::string& base, const std::vector<int64_t>& values) {
  const std::string name = Fresh(base);
  graph_.initializers.emplace(name, Tensor::FromVector<int64_t>(Shape{static_cast<int64_t>(values.size())}, values));
  return name;
}

std::string NewValues::Int64Scalar(const std::string& base, int64_t value) {
  const std::string name = Fresh(base);
  graph_.initializers.emplace(name, Tensor::FromVector<int64_t>(Shape{}, {value}));
  return name;
}

void RenameReads(Graph& graph, const std::string& from, const std::string& to) {
  for (auto& node : graph.nodes)
    for (std::string& in : node->inputs)
      if (in == from) in = to;
}

bool IsStandardOp(const Node* node, const char* op_type) {
  return node != nullptr && node->op_type == op_type && node->domain.empty() && !node->outputs.empty();
}

const std::string& OtherOperand(const Node& node, const std::string& value) {
  return node.inputs[0] == value ? node.inputs[1] : node.inputs[0];
}

bool AnyClaimed(const std::vector<Node*>& nodes, const std::set<const Node*>& doomed) {
  for (const Node* n : nodes)
    if (doomed.count(n)) return true;
  return false;
}

Node& CollapseMatch(const std::vector<Node*>& nodes, const std::string& op_type, int opset,
                    std::vector<std::string> inputs, const std::string& suffix, std::set<const Node*>& doomed) {
  Node* last = nodes.back();
  const std::string output = last->outputs[0];
  const std::string name = last->name;
  for (const Node* n : nodes)
    if (n != last) doomed.insert(n);
  *last = Node();
  last->name = name + suffix;
  last->op_type = op_type;
  last->opset = opset;
  last->inputs = std::move(inputs);
  last->outputs = {output};
  return *last;
}

void RemoveNodes(Graph& graph, const std::set<const Node*>& doomed) {
  if (doomed.empty()) return;
  std::vector<std::unique_ptr<Node>> kept;
  for (auto& node : graph.nodes)
    if (!doomed.count(node.get())) kept.push_back(std::move(node));
  graph.nodes = std::move(kept);
}

Attribute IntAttribute(const std::string& name, int64_t value) {
  Attribute attribute;
  attribute.name = name;
  attribute.type = Attribute::Type::kInt;
  attribute.i = value;
  return attribute;
}

Attribute FloatAttribute(const std::string& name, float value) {
  Attribute attribute;
  attribute.name = name;
  attribute.type = Attribute::Type::kFloat;
  attribute.f = value;
  return attribute;
}

Attribute StringAttribute(const std::string& name, const std::string& value) {
  Attribute attribute;
  attribute.name = name;
  attribute.type = Attribute::Type::kString;
  attribute.s = value;
  return attribute;
}

Attribute IntsAttribute(const std::string& name, std::vector<int64_t> values) {
  Attribute attribute;
  attribute.name = name;
  attribute.type = Attribute::Type::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

// The rank of `value` when its shape states it.
std::optional<int64_t> RankOf(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || !info->shape) return std::nullopt;
  return static_cast<int64_t>(info->shape->size());
}

// `axis` counted from the front, when it can be (a negative one needs the rank).
std::optional<int64_t> NormalizedAxis(int64_t axis, std::optional<int64_t> rank) {
  if (axis >= 0) return axis;
  if (!rank) return std::nullopt;
  return axis + *rank;
}

// The Split's part lengths along its axis, when they are known at creation.
std::optional<std::vector<int64_t>> SplitSizes(const Graph& graph, const Node& split, int64_t axis) {
  const int64_t parts = static_cast<int64_t>(split.outputs.size());
  std::vector<int64_t> sizes;
  if (split.opset >= 13 && split.HasInput(1)) {
    const Tensor* t = ConstantTensor(graph, split.inputs[1]);
    if (t == nullptr || t->type() != DataType::kInt64 || t->NumElements() != parts) return std::nullopt;
    sizes.assign(t->Data<int64_t>(), t->Data<int64_t>() + parts);
  } else if (split.opset < 13 && split.HasAttribute("split")) {
    sizes = split.GetInts("split");
  } else {
    const std::optional<std::vector<int64_t>> dims = StaticDims(graph, split.inputs[0]);
    if (!dims || axis < 0 || axis >= static_cast<int64_t>(dims->size())) return std::nullopt;
    const int64_t dim = (*dims)[static_cast<size_t>(axis)];
    const int64_t num_outputs = split.GetInt("num_outputs", 0);
    if (num_outputs > 0) {  // opset 18: ceil(dim / n) each, the last one smaller
      const int64_t part = (dim + num_outputs - 1) / num_outputs;
      for (int64_t i = 0, left = dim; i < num_outputs; ++i, left -= part) sizes.push_back(std::clamp<int64_t>(left, 0, part));
    } else {
      if (dim % parts != 0) return std::nullopt;
      sizes.assign(static_cast<size_t>(parts), dim / parts);
    }
  }
  if (static_cast<int64_t>(sizes.size()) != parts) return std::nullopt;
  for (int64_t s : sizes)
    if (s < 0) return std::nullopt;
  return sizes;
}

}  // namespace tessera
