// The built-in CPU execution provider: host memory, synchronous execution, oneDNN + own kernels.
#pragma once

#include "tessera/ep/ep_factory.h"

namespace tessera {

inline constexpr const char* kCpuEpName = "CPUExecutionProvider";

// The process-wide CPU kernel registry (built on first use).
const KernelRegistry& CpuKernelRegistry();

// Provider options of the CPU EP (string key/values; an unknown key or a bad value is an error naming it).
struct CpuProviderOptions {
  // "conv_winograd" = "1" (default) / "0": float 3x3 stride-1 convolutions with 64+ input and output channels (multiples
  // of 16) in the channel-inner layout run oneDNN's Winograd algorithm where the CPU has it (AVX-512): about 2x
  // fewer multiplications (ResNet-50's 3x3 convs), results within ~1e-6 relative of the direct algorithm.
  bool conv_winograd = true;
  // "fused_attention" = "1" (default) / "0": let the attention fusion (graph/passes/attention_fusion) and the
  // MultiHeadAttention lowering put ai.tessera::Attention on the CPU EP (providers/cpu/nn/attention.cc: register-tiled
  // float32 products in AVX-512 / AVX2 vectors; BERT-base's attention 0.34 ms against 0.40-0.57 unfused at 2
  // threads, 4 queries over 512 keys 0.11 against 0.15, one query at parity). "0" keeps MatMul / Softmax / MatMul.
  bool fused_attention = true;
  // "activated_depthwise" = "0" (default) / "1": let depthwise_input_activation move a convolution's Relu / Clip into
  // the depthwise convolution after it (ai.tessera::ActivatedNchwcConv) on the CPU EP too. Its kernel activates a
  // copy of X, where oneDNN applied the activation as the convolution's post-op for free: for tests and comparisons.
  bool activated_depthwise = false;
  // "fused_matmul_skip_layer_norm" = "0" (default) / "1": let matmul_skip_layer_norm_fusion put
  // ai.tessera::MatMulSkipLayerNormalization on the CPU EP (a fusion for the CUDA EP: the CPU kernel's product is a
  // plain loop, slower than oneDNN's): for tests and comparisons.
  bool fused_matmul_skip_layer_norm = false;
};
CpuProviderOptions ParseCpuProviderOptions(const ProviderOptions& options);

class CpuExecutionProvider : public ExecutionProvider {
 public:
  explicit CpuExecutionProvider(AllocatorPtr allocator, CpuProviderOptions options = {});
  const CpuProviderOptions& options() const { return options_; }
  const std::string& type() const override;
  const KernelRegistry& kernels() const override { return CpuKernelRegistry(); }
  const MemoryInfo& memory_info() const override;
  AllocatorPtr allocator(MemoryType type) override;
  DataTransfer* data_transfer() override { return nullptr; }
  std::unique_ptr<Stream> CreateStream() override { return nullptr; }
  // float convolutions in the layout oneDNN 2.6 runs fastest on this CPU: NHWC (0) with AVX-512 (its brgemm
  // convolutions take NHWC: ResNet-50 -8%, MobileNetV2 -11% against nChw16c on the dev VM), else 8-channel blocks
  // (AVX2).
  std::optional<int64_t> PreferredChannelBlock(const Node& conv, const Graph& graph) const override;
  // ai.tessera::Attention unless the provider option fused_attention = 0, ActivatedNchwcConv only with
  // activated_depthwise = 1, MatMulSkipLayerNormalization only with fused_matmul_skip_layer_norm = 1.
  bool PrefersFusion(const std::string& op_type, const std::string& domain) const override;

 private:
  AllocatorPtr allocator_;
  CpuProviderOptions options_;
};

// The factory behind the CPU EP device (registered by every Environment).
std::unique_ptr<EpFactory> CreateCpuEpFactory();

}  // namespace tessera
