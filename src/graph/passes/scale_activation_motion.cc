#include "graph/passes/scale_activation_motion.h"

#include <memory>

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
  std::vector<std::unique_ptr<Node>> residual_scales;  // Mul(z, s) of constants, placed first at the end
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
      // Conv -> y -> Add(y, z) -> b -> act with a constant z (MI-GAN's noise maps): s * act(y + z) = act(s * y + s * z).
      Node* add = nullptr;
      std::string residual;
      if (conv != nullptr && conv->op_type == "Add" && conv->domain.empty() && conv->inputs.size() == 2 &&
          conv->outputs.size() == 1 && index.OnlyReadBy(conv->outputs[0], *activation) && !touched.count(conv)) {
        for (size_t j = 0; j < 2 && add == nullptr; ++j) {
          Node* producer = index.Producer(conv->inputs[j]);
          const Tensor* z = ConstantTensor(graph, conv->inputs[1 - j]);
          if (IsConvOrTranspose(producer) && z != nullptr && z->type() == type &&
              index.OnlyReadBy(producer->outputs[0], *conv)) {
            add = conv;
            residual = conv->inputs[1 - j];
            conv = producer;
          }
        }
        if (add == nullptr) continue;
      }
      if (!IsConvOrTranspose(conv) || conv->inputs.size() < 2 ||
          (add == nullptr && !index.OnlyReadBy(conv->outputs[0], *activation)) || !KeepsShape(graph, *conv, *scale))
        continue;
      if (add != nullptr) {
        // Conv -> y -> Add(z) -> b -> act -> a -> Mul(s) -> out   becomes
        // Conv -> y -> Mul(s) -> a -> Add(zs) -> b -> act -> out, with zs = Mul(z, s) of constants (folded later).
        const std::string y = conv->outputs[0], b = add->outputs[0], a = activation->outputs[0], out = mul.outputs[0];
        const std::string scale_name = mul.inputs[1 - k], zs = out + "_residual_scaled";
        auto scaled_residual = std::make_unique<Node>(mul);
        scaled_residual->name = zs + "_mul";
        scaled_residual->inputs = {residual, scale_name};
        scaled_residual->outputs = {zs};
        residual_scales.push_back(std::move(scaled_residual));
        Node scaled = mul;
        scaled.inputs = {y, scale_name};
        scaled.outputs = {a};
        Node added = *add;
        added.inputs = {a, zs};
        Node activated = *activation;
        activated.inputs[0] = b;
        activated.outputs = {out};
        *add = std::move(scaled);
        *activation = std::move(added);
        mul = std::move(activated);
        touched.insert(add);
        touched.insert(activation);
        ++moved;
        break;
      }
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
  // The scaled residuals' products read constants only: ahead of everything (constant_folding folds them).
  for (auto& n : residual_scales) graph.nodes.insert(graph.nodes.begin(), std::move(n));
  return moved;
}

}  // namespace tessera
