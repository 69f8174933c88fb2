#include "providers/cuda/kernels/cuda_kernels.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>

namespace tessera::cuda {

namespace {

int64_t OutputCount(const Node& node) {
  return std::count_if(node.outputs.begin(), node.outputs.end(), [](const std::string& o) { return !o.empty(); });
}

// Explicit pads that cuDNN can apply: the same at the start and the end of every spatial axis.
bool HasSymmetricPads(const Node& node) {
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  const std::vector<int64_t> pads = node.GetInts("pads");
  const size_t half = pads.size() / 2;
  for (size_t i = 0; i < half; ++i)
    if (pads[i] != pads[i + half]) return false;
  return true;
}

// At most two spatial dimensions (the pooling kernels are 2-D; 1-D runs with a height of 1).
bool IsPool2d(const Node& node) { return node.GetInts("kernel_shape").size() <= 2; }

const std::map<std::string, std::function<bool(const Node&)>>& Predicates() {
  static const std::map<std::string, std::function<bool(const Node&)>> predicates = {
      {"Conv", [](const Node& n) { return HasSymmetricPads(n) && n.GetInts("kernel_shape").size() <= 3; }},
      {"FusedConv", [](const Node& n) { return HasSymmetricPads(n) && n.GetInts("kernel_shape").size() <= 3; }},
      {"NchwcConv", [](const Node& n) { return HasSymmetricPads(n) && n.GetInt("channel_block", 0) == 0; }},
      {"ActivatedNchwcConv", [](const Node& n) { return HasSymmetricPads(n) && n.GetInt("channel_block", 0) == 0; }},
      {"NchwcMaxPool", [](const Node& n) { return OutputCount(n) == 1 && IsPool2d(n); }},
      {"MaxPool", [](const Node& n) { return OutputCount(n) == 1 && IsPool2d(n); }},
      {"AveragePool", [](const Node& n) { return IsPool2d(n); }},
      {"ConvTranspose", [](const Node& n) { return n.GetInts("kernel_shape").size() <= 3; }},
      {"Cast", CastTargetIsSupported},
      {"LayerNormalization", [](const Node& n) { return OutputCount(n) == 1; }},
      {"ScatterElements", [](const Node& n) { return n.GetString("reduction", "none") == "none"; }},
      {"ScatterND", [](const Node& n) { return n.GetString("reduction", "none") == "none"; }},
      // ai.onnx Attention without softcap or the qk_matmul_output output (ai.tessera::Attention: always).
      {"Attention",
       [](const Node& n) {
         return n.domain != "" || (n.GetFloat("softcap", 0.0f) == 0.0f && (n.outputs.size() < 4 || n.outputs[3].empty()));
       }},
      // GroupQueryAttention without softcap (the fused kernel has none) or what no EP implements (the CPU EP names it).
      {"GroupQueryAttention",
       [](const Node& n) {
         for (size_t i = 9; i < n.inputs.size(); ++i)
           if (!n.inputs[i].empty()) return false;
         return n.GetFloat("softcap", 0.0f) == 0.0f && n.GetInt("smooth_softmax", 0) == 0 && n.GetInt("qk_output", 0) == 0;
       }},
      // MultiHeadAttention without the forms no EP implements (shared buffers, beam search, the qk output: the CPU EP
      // names them).
      {"MultiHeadAttention",
       [](const Node& n) { return !n.HasInput(8) && !n.HasInput(9) && (n.outputs.size() < 4 || n.outputs[3].empty()); }},
      {"BatchNormalization",
       [](const Node& n) {
         return OutputCount(n) == 1 && n.GetInt("training_mode", 0) == 0 && n.GetInt("spatial", 1) == 1;
       }},
  };
  return predicates;
}

}  // namespace

void RegisterCudaKernels(KernelRegistry& registry) {
  RegisterElementwiseKernels(registry);
  RegisterConvKernels(registry);
  RegisterNormalizationKernels(registry);
  RegisterContribActivationKernels(registry);
  RegisterPoolKernels(registry);
  RegisterGemmKernels(registry);
  RegisterShapeKernels(registry);
  RegisterSoftmaxKernels(registry);
  RegisterTensorKernels(registry);
  RegisterLogicKernels(registry);
  RegisterIndexingKernels(registry);
  RegisterReductionKernels(registry);
  RegisterAttentionKernels(registry);
  RegisterSkipLayerNormKernels(registry);
  RegisterSplitKernels(registry);
  RegisterScatterKernels(registry);
  RegisterReorderKernels(registry);
  RegisterRotaryEmbeddingKernels(registry);
  RegisterOnnxAttentionKernels(registry);
  RegisterGroupQueryAttentionKernels(registry);
  RegisterMultiHeadAttentionKernels(registry);
  RegisterResizeKernels(registry);
  RegisterConvTransposeKernels(registry);
}

bool NodeIsSupported(const Node& node) {
  auto it = Predicates().find(node.op_type);
  return it == Predicates().end() || it->second(node);
}

}  // namespace tessera::cuda
