#include "graph/static_shapes.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ep/window_geometry.h"
#include "tessera/status.h"

namespace tessera {

namespace {

using Dims = std::vector<int64_t>;

// Ops whose first output has their first input's shape.
const std::set<std::string>& SameShapeOps() {
  static const std::set<std::string> ops = {
      "Abs",      "BatchNormalization", "Cast",     "Ceil",     "Clip",       "Dropout",   "Elu",
      "Erf",      "Exp",                "Floor",    "Gelu",     "HardSigmoid", "HardSwish", "Identity",
      "InstanceNormalization",          "LeakyRelu", "Log",     "LRN",        "Mish",      "Neg",
      "PRelu",    "Reciprocal",         "Relu",     "Round",    "Selu",       "Sigmoid",   "Sign",
      "Softplus", "Softsign",           "Sqrt",     "Tanh",     "ThresholdedRelu"};
  return ops;
}

// Ops whose output is the multidirectional broadcast of their inputs.
const std::set<std::string>& BroadcastOps() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"};
  return ops;
}

class Propagation {
 public:
  explicit Propagation(Graph& graph) : graph_(graph) {}

  size_t Run() {
    size_t filled = 0;
    for (const auto& node : graph_.nodes) {
      if (node->outputs.empty() || node->outputs[0].empty() || Known(node->outputs[0])) continue;
      if (!node->domain.empty()) continue;
      std::optional<Dims> out;
      try {
        out = Infer(*node);
      } catch (const Error&) {  // attributes that do not fit: the kernel says so when it runs
        out.reset();
      }
      if (!out) continue;
      ValueInfo& info = graph_.value_infos[node->outputs[0]];
      if (info.name.empty()) info.name = node->outputs[0];
      std::vector<Dim> shape(out->size());
      for (size_t i = 0; i < out->size(); ++i) shape[i].value = (*out)[i];
      info.shape = std::move(shape);
      ++filled;
    }
    return filled;
  }

 private:
  bool Known(const std::string& value) const { return ShapeOf(value).has_value(); }

  // The concrete shape of `value`, when every dimension is known.
  std::optional<Dims> ShapeOf(const std::string& value) const {
    if (value.empty()) return std::nullopt;
    const ValueInfo* info = graph_.FindValueInfo(value);
    if (info == nullptr || info->kind != ValueInfo::Kind::kTensor || !info->shape) return std::nullopt;
    Dims dims;
    for (const Dim& d : *info->shape) {
      if (!d.is_concrete()) return std::nullopt;
      dims.push_back(d.value);
    }
    return dims;
  }

  std::optional<Dims> Input(const Node& node, size_t i) const {
    return node.HasInput(i) ? ShapeOf(node.inputs[i]) : std::nullopt;
  }

  std::optional<Dims> Infer(const Node& node) const {
    const std::string& op = node.op_type;
    if (SameShapeOps().count(op) != 0) return Input(node, 0);
    if (BroadcastOps().count(op) != 0) return Broadcast(node);
    if (op == "Conv") return Conv(node);
    if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") return Pool(node);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") {
      std::optional<Dims> x = Input(node, 0);
      if (!x || x->size() < 3) return std::nullopt;
      for (size_t i = 2; i < x->size(); ++i) (*x)[i] = 1;
      return x;
    }
    if (op == "Concat") return Concat(node);
    if (op == "Flatten") return Flatten(node);
    return std::nullopt;
  }

  std::optional<Dims> Broadcast(const Node& node) const {
    if (node.inputs.empty()) return std::nullopt;
    Dims out;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::optional<Dims> in = Input(node, i);
      if (!in) return std::nullopt;
      if (in->size() > out.size()) out.insert(out.begin(), in->size() - out.size(), 1);
      const size_t offset = out.size() - in->size();
      for (size_t d = 0; d < in->size(); ++d) {
        int64_t& o = out[offset + d];
        const int64_t v = (*in)[d];
        if (o == v || v == 1) continue;
        if (o != 1) return std::nullopt;  // shapes that do not broadcast
        o = v;
      }
    }
    return out;
  }

  std::optional<Dims> Conv(const Node& node) const {
    const std::optional<Dims> x = Input(node, 0), w = Input(node, 1);
    if (!x || !w || x->size() < 3 || w->size() != x->size()) return std::nullopt;
    const int64_t group = node.GetInt("group", 1);
    if (group < 1 || (*x)[1] != (*w)[1] * group || (*w)[0] % group != 0) return std::nullopt;
    const Dims spatial(x->begin() + 2, x->end()), kernel(w->begin() + 2, w->end());
    const WindowGeometry window = ResolveWindow(ReadWindowAttributes(node), spatial, kernel, node);
    Dims out = {(*x)[0], (*w)[0]};
    out.insert(out.end(), window.output.begin(), window.output.end());
    return out;
  }

  std::optional<Dims> Pool(const Node& node) const {
    if (node.outputs.size() > 1 && !node.outputs[1].empty() && node.op_type != "MaxPool") return std::nullopt;
    const std::optional<Dims> x = Input(node, 0);
    if (!x || x->size() < 3) return std::nullopt;
    const WindowAttributes attributes = ReadWindowAttributes(node);
    if (attributes.kernel_shape.size() != x->size() - 2) return std::nullopt;
    const Dims spatial(x->begin() + 2, x->end());
    const WindowGeometry window = ResolveWindow(attributes, spatial, attributes.kernel_shape, node);
    Dims out = {(*x)[0], (*x)[1]};
    out.insert(out.end(), window.output.begin(), window.output.end());
    return out;
  }

  std::optional<Dims> Concat(const Node& node) const {
    if (node.inputs.empty() || !node.HasAttribute("axis")) return std::nullopt;
    std::optional<Dims> out = Input(node, 0);
    if (!out || out->empty()) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(out->size());
    int64_t axis = node.GetInt("axis");
    if (axis < -rank || axis >= rank) return std::nullopt;
    if (axis < 0) axis += rank;
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      const std::optional<Dims> in = Input(node, i);
      if (!in || in->size() != out->size()) return std::nullopt;
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && (*in)[d] != (*out)[d]) return std::nullopt;
      if (__builtin_add_overflow((*out)[axis], (*in)[axis], &(*out)[axis])) return std::nullopt;
    }
    return out;
  }

  std::optional<Dims> Flatten(const Node& node) const {
    const std::optional<Dims> x = Input(node, 0);
    if (!x) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(x->size());
    int64_t axis = node.GetInt("axis", 1);
    if (axis < -rank || axis > rank) return std::nullopt;
    if (axis < 0) axis += rank;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
      if (__builtin_mul_overflow(d < axis ? outer : inner, (*x)[d], d < axis ? &outer : &inner))
        return std::nullopt;  // dims no tensor can have
    return Dims{outer, inner};
  }

  Graph& graph_;
};

}  // namespace

size_t PropagateStaticShapes(Graph& graph) { return Propagation(graph).Run(); }

}  // namespace tessera
