#include "providers/cpu/cpu_ep.h"

#include <cstring>

#include "providers/cpu/common/float_compute_adapter.h"
#include "providers/cpu/cpu_kernels.h"
#include "tessera/arena.h"

namespace tessera {

std::optional<int64_t> CpuExecutionProvider::PreferredChannelBlock(const Node& conv, const Graph& graph) const {
  if (conv.inputs.empty() || graph.TypeOf(conv.inputs[0]) != DataType::kFloat) return std::nullopt;
#if defined(__x86_64__) || defined(__i386__)
  static const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return avx512_core ? 0 : 8;
#else
  return 8;
#endif
}

const KernelRegistry& CpuKernelRegistry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    cpu::RegisterElementwiseKernels(r);
    cpu::RegisterActivationKernels(r);
    cpu::RegisterMatMulKernels(r);
    cpu::RegisterConvKernels(r);
    cpu::RegisterPoolKernels(r);
    cpu::RegisterNchwcPoolKernels(r);
    cpu::RegisterNchwcReorderKernels(r);
    cpu::RegisterNormalizationKernels(r);
    cpu::RegisterAttentionKernels(r);
    cpu::RegisterSkipLayerNormKernels(r);
    cpu::RegisterEmbedLayerNormKernels(r);
    cpu::RegisterRmsNormalizationKernels(r);
    cpu::RegisterOnnxAttentionKernels(r);
    cpu::RegisterMultiHeadAttentionKernels(r);
    cpu::RegisterGroupQueryAttentionKernels(r);
    cpu::RegisterRotaryEmbeddingKernels(r);
    cpu::RegisterSoftmaxKernels(r);
    cpu::RegisterReductionKernels(r);
    cpu::RegisterShapeKernels(r);
    cpu::RegisterTensorKernels(r);
    cpu::RegisterGatherKernels(r);
    cpu::RegisterTensorScatterKernels(r);
    cpu::RegisterCastKernels(r);
    cpu::RegisterLossKernels(r);
    cpu::RegisterDropoutKernels(r);
    cpu::RegisterMeanVarianceNormalizationKernels(r);
    cpu::RegisterRandomKernels(r);
    cpu::RegisterTrainingKernels(r);
    cpu::RegisterReduceToShapeKernels(r);
    cpu::RegisterResizeKernels(r);
    cpu::RegisterConvTransposeKernels(r);
    cpu::RegisterIfKernels(r);
    cpu::RegisterLoopKernels(r);
    cpu::RegisterScanKernels(r);
    cpu::RegisterSequenceKernels(r);
    cpu::RegisterOptionalKernels(r);
    cpu::RegisterSortKernels(r);
    cpu::RegisterSelectionKernels(r);
    cpu::RegisterCumSumKernels(r);
    cpu::RegisterWindowKernels(r);
    cpu::RegisterNonMaxSuppressionKernels(r);
    cpu::RegisterGridSampleKernels(r);
    cpu::RegisterEinsumKernels(r);
    cpu::RegisterDetKernels(r);
    cpu::RegisterLrnKernels(r);
    cpu::RegisterDftKernels(r);
    cpu::RegisterMaxUnpoolKernels(r);
    cpu::RegisterRoiAlignKernels(r);
    cpu::RegisterLpKernels(r);
    cpu::RegisterQuantizeKernels(r);
    cpu::RegisterIntegerConvKernels(r);
    cpu::RegisterIntegerMatMulKernels(r);
    cpu::RegisterStringKernels(r);
    cpu::RegisterRnnKernels(r);
    cpu::RegisterGruKernels(r);
    cpu::RegisterLstmKernels(r);
    cpu::AddFloatComputeAdapters(r);  // last: float16/bfloat16 for the float32-only kernels above
    return r;
  }();
  return registry;
}

CpuProviderOptions ParseCpuProviderOptions(const ProviderOptions& options) {
  CpuProviderOptions parsed;
  for (const auto& [key, value] : options) {
    if (key != "conv_winograd" && key != "fused_attention" && key != "activated_depthwise" &&
        key != "fused_matmul_skip_layer_norm")
      Fail(ErrorCode::kInvalidArgument, "CPUExecutionProvider: unknown provider option '", key,
           "' (known: conv_winograd, fused_attention, activated_depthwise, fused_matmul_skip_layer_norm)");
    if (value != "0" && value != "1")
      Fail(ErrorCode::kInvalidArgument, "CPUExecutionProvider: provider option '", key, "' must be 0 or 1, got '",
           value, "'");
    bool& option = key == "conv_winograd" ? parsed.conv_winograd
                   : key == "fused_attention"   ? parsed.fused_attention
                   : key == "activated_depthwise" ? parsed.activated_depthwise
                                                  : parsed.fused_matmul_skip_layer_norm;
    option = value == "1";
  }
  return parsed;
}

bool CpuExecutionProvider::PrefersFusion(const std::string& op_type, const std::string& domain) const {
  if (op_type == "Attention" && domain == "ai.tessera") return options_.fused_attention;
  // oneDNN fuses the producer's activation as a post-op already; moving it into the depthwise convolution would
  // cost an activated copy of X (depthwise_input_activation).
  if (op_type == "ActivatedNchwcConv" && domain == "ai.tessera") return options_.activated_depthwise;
  // Its kernel runs graphs that hold the op; oneDNN's product and the SkipLayerNormalization kernel are faster.
  if (op_type == "MatMulSkipLayerNormalization" && domain == "ai.tessera") return options_.fused_matmul_skip_layer_norm;
  return true;
}

CpuExecutionProvider::CpuExecutionProvider(AllocatorPtr allocator, CpuProviderOptions options)
    : allocator_(std::move(allocator)), options_(options) {}

const std::string& CpuExecutionProvider::type() const {
  static const std::string name = kCpuEpName;
  return name;
}

const MemoryInfo& CpuExecutionProvider::memory_info() const { return allocator_->Info(); }

AllocatorPtr CpuExecutionProvider::allocator(MemoryType type) {
  return type == MemoryType::kDefault ? allocator_ : nullptr;
}

namespace {

// Host <-> host copies (also used for host-accessible memory of other devices).
class HostDataTransfer : public DataTransfer {
 public:
  bool CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const override {
    return src.IsHostReadable() && dst.IsHostReadable();
  }
  void Copy(std::span<const CopyPair> pairs, Stream* /*stream*/) override {
    for (const CopyPair& p : pairs) {
      if (p.src->type() == DataType::kString) {
        const std::string* s = p.src->Data<std::string>();
        std::string* d = p.dst->Data<std::string>();
        for (int64_t i = 0; i < p.src->NumElements(); ++i) d[i] = s[i];
      } else if (p.src->SizeInBytes() > 0) {
        std::memcpy(p.dst->raw_data(), p.src->raw_data(), p.src->SizeInBytes());
      }
    }
  }
  bool CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const override { return CanCopy(src, dst); }
  void CopyRegions(std::span<const CopyRegion> regions, Stream* /*stream*/) override {
    for (const CopyRegion& r : regions) {
      if (r.src->type() == DataType::kString || r.dst->type() == DataType::kString)
        Fail(ErrorCode::kInvalidArgument, "copying regions of ", r.src->Describe(), " to ", r.dst->Describe(),
             ": string tensors have no bytes to copy");
      const auto* from = static_cast<const uint8_t*>(r.src->raw_data()) + r.src_offset;
      auto* to = static_cast<uint8_t*>(r.dst->raw_data()) + r.dst_offset;
      for (size_t row = 0; row < r.rows; ++row) std::memcpy(to + row * r.dst_pitch, from + row * r.src_pitch, r.row_bytes);
    }
  }
};

class CpuEpFactory : public EpFactory {
 public:
  std::string name() const override { return kCpuEpName; }
  std::string vendor() const override { return "Tessera"; }
  std::string version() const override { return "0.1.0"; }
  std::vector<EpDevice> GetEpDevices(std::span<const HardwareDevice* const> devices) override {
    std::vector<EpDevice> out;
    for (const HardwareDevice* d : devices) {
      if (d->type != DeviceType::kCpu) continue;
      EpDevice ep;
      ep.ep_name = kCpuEpName;
      ep.ep_vendor = "Tessera";
      ep.device = d;
      ep.device_memory = MemoryInfo::Host();
      ep.factory = this;
      out.push_back(std::move(ep));
    }
    return out;
  }
  std::unique_ptr<ExecutionProvider> CreateEp(const EpDevice& /*device*/, const ProviderOptions& options) override {
    return std::make_unique<CpuExecutionProvider>(std::make_shared<Arena>(CreateHostAllocator(), ArenaOptions{}),
                                                  ParseCpuProviderOptions(options));
  }
  AllocatorPtr CreateAllocator(const MemoryInfo& info) override {
    return info == MemoryInfo::Host() ? CreateHostAllocator() : nullptr;
  }
  std::unique_ptr<DataTransfer> CreateDataTransfer() override { return std::make_unique<HostDataTransfer>(); }
  std::unique_ptr<Stream> CreateStream(const MemoryInfo& /*info*/) override { return nullptr; }
};

}  // namespace

std::unique_ptr<EpFactory> CreateCpuEpFactory() { return std::make_unique<CpuEpFactory>(); }

}  // namespace tessera
