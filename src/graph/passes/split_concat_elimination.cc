#include "graph/passes/split_concat_elimination.h"

#include <algorithm>
#include <numeric>

namespace tessera {
namespace {

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
          const std::optional<int64_t> concat_axis =
              NormalizedAxis(concat.GetInt("axis", 0), rank ? rank : split_rank);
          whole = concat_axis && NormalizedAxis(split->GetInt("axis", 0), split_rank) == concat_axis;
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
    const std::optional<int64_t> axis = NormalizedAxis(split.GetInt("axis", 0), RankOf(graph, split.inputs[0]));
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
