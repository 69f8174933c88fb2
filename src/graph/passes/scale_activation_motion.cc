#include "graph/passes/scale_activation_motion.h"

#include "graph/passes/graph_rewrite.h"

namespace tessera {
namespace {

bool IsPositivelyHomogeneous(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || node.outputs.size() != 1 || node.inputs.empty() || node.inputs[0].empty()) return false;
  if (node.op_type == "Relu" || node.op_type == "LeakyRelu") return node.inputs.size() == 1;
  return node.op_type == "PRelu" && node.inputs.size() == 2 && ConstantTensor(graph, node.inputs[1]) != nullptr;
}

// Whether every value of the constant `scale` is > 0 (and not NaN).
bool AllPositive(const Tensor& scale) {
  for (int64_t i = 0; i < scale.NumElements(); ++i) {
    const double v = scale.type() == DataType::kFloat ? scale.Data<float>()[i] : ToFloat(scale.Data<Float16>()[i]);
    if (!(v > 0.0)) return false;
  }
  return true;
}

// Whether multiplying the output of `conv` (or of an elementwise activation of it) by `scale` keeps its shape: a
// scalar, or a shape of at most the output's rank (W's) whose dims other than 1 fall on the channel axis and equal
// the output channels. W must be a constant (the folding needs it too).
bool KeepsShape(const Graph& graph, const Node& conv, const Tensor& scale) {
  const Shape& s = scale.shape();
  if (s.rank() == 0) return true;
  const Tensor* w = ConstantTensor(graph, conv.inputs[1]);
  if (w == nullptr || s.rank() > w->shape().rank() || w->shape().rank() < 3) return false;
  const int64_t channels = conv.op_type == "Conv" ? w->shape()[0] : w->shape()[1] * conv.GetInt("group", 1);
  const size_t lead = w->shape().rank() - s.rank();
  for (size_t d = 0; d < s.rank(); ++d)
    if (s[d] != 1 && (lead + d != 1 || s[d] != channels)) return false;
  return true;
}

bool IsConvOrTranspose(const Node* node) {
  return node != nullptr && node->domain.empty() && (node->op_type == "Conv" || node->op_type == "ConvTranspose") &&
         node->outputs.size() == 1;
}

}  // namespace

size_t MoveScalesBeforeActivations(Graph& graph) {
  GraphIndex index(graph);
  std::set<const Node*> touched;
  size_t moved = 0;
  for (const auto& node : graph.nodes) {
    Node& mul = *node;
    if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    for (size_t k = 0; k < 2; ++k) {
      Node* activation = index.Producer(mul.inputs[k]);
      const Tensor* scale = ConstantTensor(graph, mul.inputs[1 - k]);
      if (activation == nullptr || scale == nullptr || touched.count(activation) ||
          !IsPositivelyHomogeneous(graph, *activation) || !index.OnlyReadBy(activation->outputs[0], mul))
        continue;
      const DataType type = graph.TypeOf(activation->outputs[0]);
      if ((type != DataType::kFloat && type != DataType::kFloat16) || scale->type() != type || !AllPositive(*scale))
        continue;
      Node* conv = index.Producer(activation->inputs[0]);
      if (!IsConvOrTranspose(conv) || conv->inputs.size() < 2 || !index.OnlyReadBy(conv->outputs[0], *activation) ||
          !KeepsShape(graph, *conv, *scale))
        continue;
      // Conv -> y -> act -> a -> Mul -> out   becomes   Conv -> y -> Mul -> a -> act -> out: the two nodes swap
      // places and keep their value names (a now holds the scaled convolution; its shape and type are y's).
      const std::string y = activation->inputs[0], a = activation->outputs[0], out = mul.outputs[0];
      const std::string scale_name = mul.inputs[1 - k];
      Node scaled = mul;
      scaled.inputs = {y, scale_name};
      scaled.outputs = {a};
      Node activated = *activation;
      activated.inputs[0] = a;
      activated.outputs = {out};
      *activation = std::move(scaled);  // the Mul runs where the activation ran, right after the convolution
      mul = std::move(activated);
      touched.insert(activation);
      ++moved;
      break;
    }
  }
  return moved;
}

}  // namespace tessera
