#include "tessera/ep/shape_computations.h"

#include <string>

namespace tessera {

std::set<size_t> ShapeComputations(const Graph& graph) {
  std::set<std::string> shape_values;
  std::set<size_t> nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = *graph.nodes[i];
    bool derived = node.op_type == "Shape", from_shape = false;
    if (!derived && node.op_type != "ConstantOfShape") {
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

}  // namespace tessera
