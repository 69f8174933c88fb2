#include "graph/passes/float32_regions.h"

#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "graph/passes/graph_rewrite.h"

namespace tessera {
namespace {

bool IsHalf(DataType type) { return type == DataType::kFloat16 || type == DataType::kBFloat16; }

// Default-domain ops whose output types come from attributes (or that make values from nothing): retyping their
// operands would change what they produce.
bool NamesItsTypes(const Node& node) {
  static const std::set<std::string> ops = {"CastLike",          "ConstantOfShape",   "Constant",
                                            "RandomNormal",      "RandomUniform",     "RandomNormalLike",
                                            "RandomUniformLike", "EyeLike",           "Multinomial",
                                            "Bernoulli"};
  return node.domain.empty() && ops.count(node.op_type) != 0;
}

bool HasSubgraph(const Node& node) {
  for (const auto& [name, attribute] : node.attributes)
    if (attribute.g || !attribute.graphs.empty()) return true;
  return false;
}

struct Candidate {
  const void* ep = nullptr;
  bool widens = false;
  DataType half = DataType::kUndefined;
};

// Sets the types of `values` to float32 in `graph` for as long as it lives (the kernel lookups read value infos
// before initializers), then puts back what was there.
class Retyped {
 public:
  Retyped(Graph& graph, const std::vector<std::string>& values) : graph_(graph) {
    for (const std::string& value : values) {
      if (saved_.count(value)) continue;
      auto it = graph.value_infos.find(value);
      saved_[value] = it == graph.value_infos.end() ? std::nullopt : std::optional<ValueInfo>(it->second);
      ValueInfo& info = graph.value_infos[value];
      info.name = value;
      info.type = DataType::kFloat;
    }
  }
  ~Retyped() {
    for (auto& [value, info] : saved_) {
      if (info)
        graph_.value_infos[value] = *info;
      else
        graph_.value_infos.erase(value);
    }
  }

 private:
  Graph& graph_;
  std::map<std::string, std::optional<ValueInfo>> saved_;
};

std::optional<Candidate> Examine(Node& node, Graph& graph, const KernelChoiceFor& kernel_choice) {
  if (NamesItsTypes(node) || HasSubgraph(node)) return std::nullopt;
  Candidate candidate;
  std::vector<std::string> half_values;
  const auto look = [&](const std::string& value) {
    if (value.empty()) return true;
    const ValueInfo* info = graph.FindValueInfo(value);
    if (info != nullptr && info->kind != ValueInfo::Kind::kTensor) return false;
    const DataType type = graph.TypeOf(value);
    if (type == DataType::kUndefined) return false;  // might be 16-bit: leave the node alone
    if (!IsHalf(type)) return true;
    if (candidate.half != DataType::kUndefined && candidate.half != type) return false;  // float16 and bfloat16
    candidate.half = type;
    half_values.push_back(value);
    return true;
  };
  for (const std::string& input : node.inputs)
    if (!look(input)) return std::nullopt;
  for (const std::string& output : node.outputs)
    if (!look(output)) return std::nullopt;
  if (candidate.half == DataType::kUndefined) return std::nullopt;
  // A Cast to the 16-bit type is a rounding the model asks for (a Cast from it, to anything, is not).
  if (IsStandardOp(&node, "Cast") && !node.outputs.empty() && graph.TypeOf(node.outputs[0]) == candidate.half)
    return std::nullopt;
  const std::optional<KernelChoice> now = kernel_choice(node, graph);
  if (!now) return std::nullopt;
  std::optional<KernelChoice> widened;
  {
    Retyped retyped(graph, half_values);
    widened = kernel_choice(node, graph);
  }
  if (!widened || widened->ep != now->ep) return std::nullopt;
  candidate.ep = now->ep;
  candidate.widens = now->computes_in_float32;
  return candidate;
}

size_t Root(std::vector<size_t>& parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

Attribute ToAttribute(DataType type) { return IntAttribute("to", static_cast<int64_t>(type)); }

}  // namespace

size_t ComputeHalfRegionsInFloat32(Graph& graph, const KernelChoiceFor& kernel_choice) {
  if (!kernel_choice) return 0;
  auto opset = graph.opsets.find("");
  if (opset == graph.opsets.end() || opset->second < 6) return 0;  // Cast's float16 semantics: opset 6 and later
  const int cast_opset = opset->second;

  const size_t count = graph.nodes.size();
  std::vector<std::optional<Candidate>> candidates(count);
  std::map<const Node*, size_t> position;
  for (size_t i = 0; i < count; ++i) {
    position[graph.nodes[i].get()] = i;
    candidates[i] = Examine(*graph.nodes[i], graph, kernel_choice);
  }

  // Regions: candidates joined by the 16-bit values one writes and another reads, on the same EP.
  GraphIndex index(graph);
  std::vector<size_t> parent(count);
  std::iota(parent.begin(), parent.end(), size_t{0});
  for (size_t i = 0; i < count; ++i) {
    if (!candidates[i]) continue;
    for (const std::string& output : graph.nodes[i]->outputs) {
      if (output.empty() || graph.TypeOf(output) != candidates[i]->half) continue;
      for (const Node* reader : index.Consumers(output)) {
        auto at = position.find(reader);
        if (at == position.end()) continue;
        const std::optional<Candidate>& other = candidates[at->second];
        if (other && other->ep == candidates[i]->ep && other->half == candidates[i]->half)
          parent[Root(parent, at->second)] = Root(parent, i);
      }
    }
  }
  std::set<size_t> gaining;  // regions with a node that widens inside its kernel
  for (size_t i = 0; i < count; ++i)
    if (candidates[i] && candidates[i]->widens) gaining.insert(Root(parent, i));
  std::vector<bool> moved(count, false);
  size_t moved_count = 0;
  for (size_t i = 0; i < count; ++i)
    if (candidates[i] && gaining.count(Root(parent, i))) {
      moved[i] = true;
      ++moved_count;
    }
  if (moved_count == 0) return 0;

  const auto float_info = [&](const std::string& from, const std::string& name) {
    ValueInfo info;
    if (const ValueInfo* known = graph.FindValueInfo(from)) info = *known;
    info.name = name;
    info.kind = ValueInfo::Kind::kTensor;
    info.type = DataType::kFloat;
    graph.value_infos[name] = info;
  };
  const auto make_cast = [&](const std::string& input, const std::string& output, DataType to) {
    auto cast = std::make_unique<Node>();
    cast->name = output + "_cast";
    cast->op_type = "Cast";
    cast->opset = cast_opset;
    cast->inputs = {input};
    cast->outputs = {output};
    cast->attributes["to"] = ToAttribute(to);
    return cast;
  };

  // The float32 name of every 16-bit value a moved node writes (the node writes that name from now on).
  std::map<std::string, std::string> written;
  std::map<size_t, std::vector<std::string>> written_by;  // node -> the original names of its renamed outputs
  for (size_t i = 0; i < count; ++i) {
    if (!moved[i]) continue;
    for (std::string& output : graph.nodes[i]->outputs) {
      if (output.empty() || graph.TypeOf(output) != candidates[i]->half) continue;
      const std::string renamed = FreshValueName(graph, output + "_f32");
      float_info(output, renamed);
      written[output] = renamed;
      written_by[i].push_back(output);
      output = renamed;
    }
  }
  // Which of those the rest of the graph still reads as 16-bit values.
  std::map<size_t, std::vector<std::unique_ptr<Node>>> after;  // rounding Casts, after their producer
  for (const auto& [i, originals] : written_by) {
    for (const std::string& original : originals) {
      bool read_outside = graph.IsGraphOutput(original) || index.ReadBySubgraph(original);
      for (const Node* reader : index.Consumers(original)) {
        auto at = position.find(reader);
        if (at == position.end() || !moved[at->second]) read_outside = true;
      }
      if (read_outside)
        after[i].push_back(make_cast(written[original], original, candidates[i]->half));
      else
        graph.value_infos.erase(original);
    }
  }
  // Moved nodes read the float32 names; 16-bit values from outside come through one Cast each, placed before
  // their first moved reader.
  std::map<std::string, std::string> widened;  // outside value -> float32 name
  std::map<size_t, std::vector<std::unique_ptr<Node>>> before;
  for (size_t i = 0; i < count; ++i) {
    if (!moved[i]) continue;
    for (std::string& input : graph.nodes[i]->inputs) {
      if (input.empty()) continue;
      if (auto it = written.find(input); it != written.end()) {
        input = it->second;
        continue;
      }
      if (graph.TypeOf(input) != candidates[i]->half) continue;
      auto it = widened.find(input);
      if (it == widened.end()) {
        const std::string name = FreshValueName(graph, input + "_f32");
        float_info(input, name);
        before[i].push_back(make_cast(input, name, DataType::kFloat));
        it = widened.emplace(input, name).first;
      }
      input = it->second;
    }
  }

  std::vector<std::unique_ptr<Node>> nodes;
  nodes.reserve(count + widened.size() + after.size());
  for (size_t i = 0; i < count; ++i) {
    if (auto it = before.find(i); it != before.end())
      for (auto& cast : it->second) nodes.push_back(std::move(cast));
    nodes.push_back(std::move(graph.nodes[i]));
    if (auto it = after.find(i); it != after.end())
      for (auto& cast : it->second) nodes.push_back(std::move(cast));
  }
  graph.nodes = std::move(nodes);
  return moved_count;
}

}  // namespace tessera
