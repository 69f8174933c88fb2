#include "graph/passes/split_concat_elimination.h"

#include <algorithm>
#include <numeric>

namespace tessera {
namespace {

// The rank of `value` when its shape states it.
std::optional<int64_t> RankOf(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValueInfo(value);
  if (info == nullptr || !info->shape) return std::nullopt;
  return static_cast<int64_t>(info->shape->size());
}

// `axis` counted from the front, when it can be (a negative one needs the rank).
std::optional<int64_t> Normalized(int64_t axis, std::optional<int64_t> rank) {
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
    if (!dims || axis >= static_cast<int64_t>(dims->size())) return std::nullopt;
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

bool HasReaders(const Graph& graph, const GraphIndex& index, const std::string& value) {
  return !value.empty() && (graph.IsGraphOutput(value) || !index.Consumers(value).empty());
}

}  // namespace

size_t EliminateSplitConcat(Graph& graph) {
  size_t replaced = 0;
  std::set<const Node*> touched;  // Splits whose outputs lost a reader
  {
    GraphIndex index(graph);
    for (const auto& node : graph.nodes) {
      Node& concat = *node;
      if (!IsStandardOp(&concat, "Concat") || concat.inputs.size() < 2) continue;
      // Every input has the output's rank; a Split's parts that of its input.
      std::optional<int64_t> rank = RankOf(graph, concat.outputs[0]);
      for (size_t i = 0; !rank && i < concat.inputs.size(); ++i) rank = RankOf(graph, concat.inputs[i]);
      std::vector<std::string> inputs;
      for (size_t i = 0; i < concat.inputs.size();) {
        Node* split = index.Producer(concat.inputs[i]);
        const bool starts_run = split != nullptr && IsStandardOp(split, "Split") && split->outputs.size() >= 2 &&
                                !split->inputs.empty() && concat.inputs[i] == split->outputs[0] &&
                                i + split->outputs.size() <= concat.inputs.size();
        bool whole = starts_run;
        for (size_t k = 0; whole && k < split->outputs.size(); ++k)
          whole = concat.inputs[i + k] == split->outputs[k] && !index.ReadBySubgraph(split->outputs[k]);
        if (whole) {
          const std::optional<int64_t> split_rank = RankOf(graph, split->inputs[0]);
          const std::optional<int64_t> concat_axis = Normalized(concat.GetInt("axis", 0), rank ? rank : split_rank);
          whole = concat_axis && Normalized(split->GetInt("axis", 0), split_rank) == concat_axis;
        }
        if (!whole) {
          inputs.push_back(concat.inputs[i++]);
          continue;
        }
        inputs.push_back(split->inputs[0]);
        i += split->outputs.size();
        touched.insert(split);
        ++replaced;
      }
      concat.inputs = std::move(inputs);
    }
  }
  if (touched.empty()) return 0;
  // Splits left with one part that anybody reads become a Slice of it; with none, they go.
  GraphIndex index(graph);
  NewValues values(graph);
  std::set<const Node*> doomed;
  for (const auto& node : graph.nodes) {
    Node& split = *node;
    if (!touched.count(&split)) continue;
    std::vector<size_t> read;
    for (size_t k = 0; k < split.outputs.size(); ++k)
      if (HasReaders(graph, index, split.outputs[k])) read.push_back(k);
    if (read.empty()) {
      doomed.insert(&split);
      continue;
    }
    if (read.size() != 1) continue;
    const std::optional<int64_t> axis = Normalized(split.GetInt("axis", 0), RankOf(graph, split.inputs[0]));
    if (!axis) continue;
    const std::optional<std::vector<int64_t>> sizes = SplitSizes(graph, split, *axis);
    if (!sizes) continue;
    const size_t k = read[0];
    const int64_t begin = std::accumulate(sizes->begin(), sizes->begin() + static_cast<long>(k), int64_t{0});
    Node slice;
    slice.name = split.name + "_slice";
    slice.op_type = "Slice";
    slice.opset = std::max(split.opset, 13);
    slice.inputs = {split.inputs[0], values.Int64s(split.name + "_starts", {begin}),
                    values.Int64s(split.name + "_ends", {begin + (*sizes)[k]}),
                    values.Int64s(split.name + "_axes", {*axis})};
    slice.outputs = {split.outputs[k]};
    for (size_t j = 0; j < split.outputs.size(); ++j)
      if (j != k) graph.value_infos.erase(split.outputs[j]);
    split = std::move(slice);
  }
  RemoveNodes(graph, doomed);
  return replaced;
}

}  // namespace tessera
