#include "graph/passes/conv_bn_folding.h"

#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/passes/graph_rewrite.h"

namespace tessera {
namespace {

// A float32 or float16 constant.
const Tensor* FloatConstant(const Graph& graph, const std::string& value) {
  const Tensor* tensor = ConstantTensor(graph, value);
  const bool is_float = tensor != nullptr && (tensor->type() == DataType::kFloat || tensor->type() == DataType::kFloat16);
  return is_float ? tensor : nullptr;
}

std::vector<float> ValuesOf(const Tensor& t) {
  if (t.type() == DataType::kFloat) return t.ToVector<float>();
  std::vector<float> values(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) values[i] = ToFloat(t.Data<Float16>()[i]);
  return values;
}

// `values` as a tensor of `type` (float32 or float16) and `shape`.
Tensor TensorOf(DataType type, const Shape& shape, const std::vector<float>& values) {
  Tensor t = Tensor::Allocate(type, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (type == DataType::kFloat)
      t.Data<float>()[i] = values[i];
    else
      t.Data<Float16>()[i] = ToFloat16(values[i]);
  }
  return t;
}

bool IsInferenceBatchNorm(const Node& node) {
  if (node.op_type != "BatchNormalization" || node.domain != "" || node.NumInputs() != 5) return false;
  if (node.GetInt("training_mode", 0) != 0) return false;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) return false;
  return true;
}

bool IsConvOrTranspose(const Node& node) {
  return (node.op_type == "Conv" || node.op_type == "ConvTranspose") && node.domain.empty();
}

// The output channels of `conv` (Conv or ConvTranspose) with weights of `shape`: Conv's W is
// [C_out, C_in / group, kernel...], ConvTranspose's [C_in, C_out / group, kernel...]. 0 when the shape does not fit.
int64_t OutputChannels(const Node& conv, const Shape& shape) {
  if (shape.rank() < 3) return 0;
  if (conv.op_type == "Conv") return shape[0];
  const int64_t group = conv.GetInt("group", 1);
  return group >= 1 && shape[0] % group == 0 ? shape[1] * group : 0;
}

// Multiplies every weight of output channel c by factor[c] (W of `shape`, as OutputChannels reads it).
void ScaleOutputChannels(const Node& conv, const Shape& shape, std::vector<float>& w, const std::vector<float>& factor) {
  if (conv.op_type == "Conv") {
    const int64_t per_channel = shape.SizeFrom(1);
    for (int64_t c = 0; c < shape[0]; ++c)
      for (int64_t k = 0; k < per_channel; ++k) w[c * per_channel + k] *= factor[c];
    return;
  }
  const int64_t ic_per_group = shape[0] / conv.GetInt("group", 1), oc_per_group = shape[1], taps = shape.SizeFrom(2);
  for (int64_t ic = 0; ic < shape[0]; ++ic)
    for (int64_t oc = 0; oc < oc_per_group; ++oc) {
      const float f = factor[ic / ic_per_group * oc_per_group + oc];
      for (int64_t k = 0; k < taps; ++k) w[(ic * oc_per_group + oc) * taps + k] *= f;
    }
}

struct FoldedParameters {
  Tensor weight, bias;
};

// The per-channel parameters of `bn` applied to the conv's weight and bias, computed in float32 and stored in the
// weight's type; nullopt when a parameter is not a float constant of the conv's output-channel count and type.
std::optional<FoldedParameters> Fold(const Graph& graph, const Node& conv, const Node& bn) {
  const Tensor* weight = FloatConstant(graph, conv.inputs[1]);
  const Tensor* conv_bias = conv.HasInput(2) ? FloatConstant(graph, conv.inputs[2]) : nullptr;
  if (weight == nullptr || (conv.HasInput(2) && conv_bias == nullptr)) return std::nullopt;
  const DataType type = weight->type();
  const int64_t channels = OutputChannels(conv, weight->shape());
  if (channels == 0) return std::nullopt;
  std::vector<float> params[4];
  for (size_t i = 0; i < 4; ++i) {
    const Tensor* param = FloatConstant(graph, bn.inputs[i + 1]);
    if (param == nullptr || param->NumElements() != channels) return std::nullopt;
    params[i] = ValuesOf(*param);
  }
  if (conv_bias != nullptr && (conv_bias->NumElements() != channels || conv_bias->type() != type)) return std::nullopt;
  const float epsilon = bn.GetFloat("epsilon", 1e-5f);
  const std::vector<float>& scale = params[0];
  const std::vector<float>& shift = params[1];
  const std::vector<float>& mean = params[2];
  const std::vector<float>& var = params[3];
  const std::vector<float> bias = conv_bias != nullptr ? ValuesOf(*conv_bias) : std::vector<float>(channels, 0.0f);
  std::vector<float> w = ValuesOf(*weight), new_b(channels), factor(channels);
  for (int64_t c = 0; c < channels; ++c) {
    factor[c] = scale[c] / std::sqrt(var[c] + epsilon);
    new_b[c] = (bias[c] - mean[c]) * factor[c] + shift[c];
  }
  ScaleOutputChannels(conv, weight->shape(), w, factor);
  return FoldedParameters{TensorOf(type, weight->shape(), w), TensorOf(type, Shape{channels}, new_b)};
}

// Points `conv` at folded parameters and makes it write `output` (the folded node's output, whose readers all come
// after the conv): `weight` (nullopt: the conv's own) and `bias` become new initializers named after `tag`.
void InstallFolded(Graph& graph, Node& conv, std::optional<Tensor> weight, Tensor bias, const std::string& tag,
                   const std::string& output) {
  const auto add = [&](const std::string& base, Tensor t) {
    const std::string name = FreshValueName(graph, conv.name + base);
    graph.value_infos[name] = ValueInfo{name, ValueInfo::Kind::kTensor, t.type(), std::nullopt};
    graph.initializers[name] = std::move(t);
    return name;
  };
  const std::string weight_name = weight ? add("_" + tag + "_folded_weight", std::move(*weight)) : conv.inputs[1];
  const std::string bias_name = add("_" + tag + "_folded_bias", std::move(bias));
  graph.value_infos.erase(conv.outputs[0]);
  conv.inputs.resize(3);
  conv.inputs[1] = weight_name;
  conv.inputs[2] = bias_name;
  conv.outputs[0] = output;
}

// The value of constant `c` per output channel of a Conv output of `rank` with `channels`, when `c` broadcasts
// against it as one value or one per channel; nullopt otherwise.
std::optional<std::vector<float>> PerChannel(const Tensor& c, size_t rank, int64_t channels) {
  const Shape& shape = c.shape();
  if (shape.rank() > rank) return std::nullopt;
  bool per_channel = false;
  for (size_t i = 0; i < shape.rank(); ++i) {
    const size_t axis = rank - shape.rank() + i;
    if (shape[i] == 1) continue;
    if (axis != 1 || shape[i] != channels) return std::nullopt;
    per_channel = true;
  }
  const std::vector<float> values = ValuesOf(c);
  return per_channel ? values : std::vector<float>(static_cast<size_t>(channels), values[0]);
}

// Folds `step` (Mul, Add or Sub of the Conv's output and a constant) into `conv`; false when it does not apply.
bool FoldAffineStep(Graph& graph, Node& conv, const Node& step) {
  const Tensor* weight = FloatConstant(graph, conv.inputs[1]);
  const Tensor* conv_bias = conv.HasInput(2) ? FloatConstant(graph, conv.inputs[2]) : nullptr;
  if (weight == nullptr || (conv.HasInput(2) && conv_bias == nullptr)) return false;
  const size_t constant_at = step.inputs[0] == conv.outputs[0] ? 1 : 0;
  if (step.inputs[1 - constant_at] != conv.outputs[0] || (step.op_type == "Sub" && constant_at != 1)) return false;
  const Tensor* constant = FloatConstant(graph, step.inputs[constant_at]);
  const DataType type = weight->type();
  const int64_t channels = OutputChannels(conv, weight->shape());
  if (channels == 0 || constant == nullptr || constant->type() != type || (conv_bias != nullptr && conv_bias->type() != type) ||
      (conv_bias != nullptr && conv_bias->NumElements() != channels))
    return false;
  const std::optional<std::vector<float>> values = PerChannel(*constant, weight->shape().rank(), channels);
  if (!values) return false;
  std::vector<float> w = ValuesOf(*weight);
  std::vector<float> b = conv_bias != nullptr ? ValuesOf(*conv_bias) : std::vector<float>(channels, 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    const float v = (*values)[static_cast<size_t>(c)];
    b[c] = step.op_type == "Mul" ? b[c] * v : step.op_type == "Add" ? b[c] + v : b[c] - v;
  }
  if (step.op_type == "Mul") ScaleOutputChannels(conv, weight->shape(), w, *values);
  std::optional<Tensor> scaled;
  if (step.op_type == "Mul") scaled = TensorOf(type, weight->shape(), w);
  InstallFolded(graph, conv, std::move(scaled), TensorOf(type, Shape{channels}, b), "affine", step.outputs[0]);
  return true;
}

}  // namespace

size_t FoldConvAffine(Graph& graph) {
  size_t folded = 0;
  for (bool changed = true; changed;) {
    changed = false;
    GraphIndex index(graph);
    std::set<const Node*> doomed, touched;
    for (const auto& node : graph.nodes) {
      Node& step = *node;
      if ((step.op_type != "Mul" && step.op_type != "Add" && step.op_type != "Sub") || !step.domain.empty() ||
          step.inputs.size() != 2 || step.outputs.size() != 1)
        continue;
      for (const std::string& input : step.inputs) {
        Node* conv = index.Producer(input);
        if (conv == nullptr || !IsConvOrTranspose(*conv) || conv->NumInputs() < 2 ||
            conv->outputs.size() != 1 || touched.count(conv) || !index.OnlyReadBy(conv->outputs[0], step) ||
            step.inputs[0] == step.inputs[1])
          continue;
        if (!FoldAffineStep(graph, *conv, step)) continue;
        touched.insert(conv);  // its output moved: fold the next step in the next sweep
        doomed.insert(&step);
        changed = true;
        break;
      }
    }
    RemoveNodes(graph, doomed);
    folded += doomed.size();
  }
  return folded;
}

size_t FoldConvBatchNorm(Graph& graph) {
  GraphIndex index(graph);
  std::set<const Node*> doomed;
  for (const auto& node : graph.nodes) {
    Node& bn = *node;
    if (!IsInferenceBatchNorm(bn)) continue;
    Node* conv = index.Producer(bn.inputs[0]);
    if (conv == nullptr || !IsConvOrTranspose(*conv) || conv->NumInputs() < 2 ||
        conv->outputs.size() != 1 || !index.OnlyReadBy(conv->outputs[0], bn))
      continue;
    std::optional<FoldedParameters> folded = Fold(graph, *conv, bn);
    if (!folded) continue;
    // The conv now writes the BN's output; the BN's readers all come after the conv in the order.
    InstallFolded(graph, *conv, std::move(folded->weight), std::move(folded->bias), "bn", bn.outputs[0]);
    doomed.insert(&bn);
  }
  RemoveNodes(graph, doomed);
  return doomed.size();
}

}  // namespace tessera
