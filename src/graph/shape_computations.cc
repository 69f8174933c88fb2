#include "tessera/ep/shape_computations.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

namespace {

// Whether input `index` of `op` is read as a shape, axes, bounds or a count (on the host), not as data.
bool IsShapeInput(const std::string& op, size_t index) {
  static const std::map<std::string, size_t> first_shape_input = {
      {"Reshape", 1},       {"Expand", 1},    {"Tile", 1},       {"Slice", 1},     {"ConstantOfShape", 0},
      {"Range", 0},         {"Squeeze", 1},   {"Unsqueeze", 1},  {"Pad", 1},       {"Resize", 1},
      {"Upsample", 1},      {"TopK", 1},      {"Split", 1},      {"OneHot", 1},    {"ReduceSum", 1},
      {"ReduceMean", 1},    {"ReduceMax", 1}, {"ReduceMin", 1},  {"ReduceProd", 1}, {"ReduceL2", 1},
      {"ReduceLogSumExp", 1}, {"CumSum", 1},  {"EyeLike", 1},    {"RandomNormalLike", 1}};
  const auto it = first_shape_input.find(op);
  return it != first_shape_input.end() && index >= it->second;
}

// Ops that make data of a shape's size: a fill, position ids over a sequence length.
bool MakesData(const std::string& op) { return op == "ConstantOfShape" || op == "Range"; }

// Nodes whose inputs all derive from Shape (or initializers), at least one from Shape, with no floating-point
// output; `excluded` nodes are not.
std::set<size_t> DerivedFromShapes(const Graph& graph, const std::set<size_t>& excluded) {
  std::set<std::string> shape_values;
  std::set<size_t> nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = *graph.nodes[i];
    bool derived = node.op_type == "Shape", from_shape = false;
    if (!derived && excluded.count(i) == 0) {
      derived = true;
      for (const std::string& input : node.inputs) {
        if (input.empty() || graph.IsInitializer(input)) continue;
        const bool is_shape = shape_values.count(input) != 0;
        derived = derived && is_shape;
        from_shape = from_shape || is_shape;
      }
      derived = derived && from_shape;
      // A floating-point result is data, not a shape (e.g. Gather of position embeddings by indices computed from
      // shapes): it belongs on the device.
      for (const std::string& output : node.outputs) {
        const DataType type = output.empty() ? DataType::kUndefined : graph.TypeOf(output);
        if (type == DataType::kFloat || type == DataType::kFloat16 || type == DataType::kBFloat16 ||
            type == DataType::kDouble)
          derived = false;
      }
      if (derived) nodes.insert(i);
    }
    if (derived) shape_values.insert(node.outputs.begin(), node.outputs.end());
  }
  return nodes;
}

}  // namespace

// ConstantOfShape and Range stay among the shape computations only while no value computed from theirs is read as
// data: torch's `expand` computes its shape through ConstantOfShape -> Mul -> Equal -> Where (host work), while
// position ids made by Range (and cast, offset) before they meet a device tensor are data (device work). A value is
// read as data when it is a graph output, or a data input (not a shape input) of a node outside the set or of a
// node whose own outputs are read as data. A data maker that leaves the set takes the nodes derived only through it
// along (the derivation is recomputed without it).
std::set<size_t> ShapeComputations(const Graph& graph) {
  std::set<size_t> excluded;
  for (;;) {
    const std::set<size_t> nodes = DerivedFromShapes(graph, excluded);
    std::set<std::string> data;
    for (const ValueInfo& output : graph.outputs) data.insert(output.name);
    bool changed = false;
    for (size_t j = graph.nodes.size(); j-- > 0;) {
      const Node& node = *graph.nodes[j];
      bool outputs_are_data = false;
      for (const std::string& output : node.outputs) outputs_are_data = outputs_are_data || data.count(output) != 0;
      if (nodes.count(j) != 0 && !outputs_are_data) continue;
      if (nodes.count(j) != 0 && MakesData(node.op_type)) changed = excluded.insert(j).second || changed;
      for (size_t k = 0; k < node.inputs.size(); ++k)
        if (!node.inputs[k].empty() && !IsShapeInput(node.op_type, k)) data.insert(node.inputs[k]);
    }
    if (!changed) return nodes;
  }
}

}  // namespace tessera
