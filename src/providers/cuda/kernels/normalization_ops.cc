// BatchNormalization in inference mode (one output; training_mode = 0), LayerNormalization (output Y
// only; scale and bias of the normalized size, each float32 or float16 independently of X), and the RMS
// normalizations with the CPU EP's semantics (providers/cpu/nn/rms_normalization.cc): RMSNormalization (opset 23),
// com.microsoft SimplifiedLayerNormalization (inv_std_var output too) and SkipSimplifiedLayerNormalization.
#include <climits>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

class BatchNormKernel : public Kernel {
 public:
  explicit BatchNormKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    if (x.shape().rank() < 2)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X ", x.shape().ToString(), " needs rank >= 2");
    const int64_t channels = x.shape()[1];
    const Tensor& scale = ctx.Input(1);
    const DataType param_type = scale.type();
    for (size_t i = 1; i <= 4; ++i) {
      const Tensor& p = ctx.Input(i);
      if (p.NumElements() != channels || p.type() != param_type)
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", i, " is ", p.Describe(), ", expected ",
             channels, " values of one type");
    }
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (y.NumElements() == 0) return;
    const int64_t batch = x.shape()[0];
    const int64_t spatial = x.shape().SizeFrom(2);
    CheckLaunch(ctx,
                launch::BatchNormInference(FloatElementType(ctx, x.type()), FloatElementType(ctx, param_type),
                                           x.raw_data(), scale.raw_data(), ctx.Input(2).raw_data(),
                                           ctx.Input(3).raw_data(), ctx.Input(4).raw_data(), epsilon_, y.raw_data(),
                                           batch, channels, spatial, StreamOf(ctx)),
                "BatchNormalization launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  float epsilon_;
};

class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        axis_(info.node().GetInt("axis", -1)),
        epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Tensor& scale = ctx.Input(1);
    const Tensor* bias = ctx.OptionalInput(2);
    const size_t axis =
        static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(x.shape().rank()), "LayerNormalization axis"));
    const int64_t length = x.shape().SizeFrom(axis);
    if (scale.NumElements() != length || (bias != nullptr && bias->NumElements() != length))
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": the CUDA LayerNormalization needs Scale and B with ",
           length, " values, got ", scale.Describe(), bias ? ", " + bias->Describe() : std::string());
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (y.NumElements() == 0) return;
    CheckLaunch(ctx,
                launch::LayerNorm(FloatElementType(ctx, x.type()), FloatElementType(ctx, scale.type()),
                                  FloatElementType(ctx, bias ? bias->type() : scale.type()), x.raw_data(),
                                  scale.raw_data(), bias ? bias->raw_data() : nullptr, epsilon_, y.raw_data(),
                                  x.shape().SizeTo(axis), length, StreamOf(ctx)),
                "LayerNormalization launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  int64_t axis_;
  float epsilon_;
};

// RMSNormalization / SimplifiedLayerNormalization(X, scale) over the axes from `axis`, and
// SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) over the last axis. The scale (gamma) must hold every
// value of the normalized axes (the CPU EP also broadcasts a smaller one).
class RmsNormKernel : public Kernel {
 public:
  RmsNormKernel(const KernelInfo& info, bool skip)
      : ep_(CudaEpOf(info)),
        skip_(skip),
        axis_(skip ? -1 : info.node().GetInt("axis", -1)),
        epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {
    const Node& node = info.node();
    if (node.GetInt("stash_type", 1) != 1)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": stash_type ", node.GetInt("stash_type", 1),
           " is not supported (only 1, float32)");
    if (skip && node.outputs.size() > 1 && !node.outputs[1].empty())
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": output 1 (mean) is not defined for the RMS form");
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor* skip = skip_ ? &ctx.Input(1) : nullptr;
    const Tensor& scale = ctx.Input(skip_ ? 2 : 1);
    const Tensor* bias = skip_ ? ctx.OptionalInput(3) : nullptr;
    const int64_t rank = static_cast<int64_t>(x.shape().rank());
    if (skip_ && (rank < 2 || skip->shape() != x.shape() || skip->type() != x.type()))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", x, " and skip ", *skip,
           " must have one shape of rank 2 or 3 and one type");
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, rank, "RMS normalization axis"));
    const int64_t length = x.shape().SizeFrom(axis);
    if (scale.NumElements() != length)
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": the CUDA kernel needs a scale with all ", length,
           " values of the normalized axes, got ", scale.Describe());
    if (bias != nullptr && (bias->type() != x.type() || bias->NumElements() != length))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": bias is ", bias->Describe(), ", expected ",
           DataTypeName(x.type()), " [", length, "]");
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    const size_t stats_output = skip_ ? 2 : 1;
    float* inv_std = nullptr;
    if (ctx.NumOutputs() > stats_output && !node.outputs[stats_output].empty()) {
      std::vector<int64_t> dims = x.shape().dims();
      for (size_t d = axis; d < dims.size(); ++d) dims[d] = 1;
      inv_std = static_cast<float*>(ctx.Output(stats_output, DataType::kFloat, Shape(dims)).raw_data());
    }
    void* sum = skip_ && ctx.NumOutputs() > 3 && !node.outputs[3].empty()
                    ? ctx.Output(3, x.type(), x.shape()).raw_data()
                    : nullptr;
    if (y.NumElements() == 0) return;
    CheckLaunch(ctx,
                launch::RmsNorm(FloatElementType(ctx, x.type()), FloatElementType(ctx, scale.type()), x.raw_data(),
                                skip ? skip->raw_data() : nullptr, bias ? bias->raw_data() : nullptr,
                                scale.raw_data(), epsilon_, y.raw_data(), sum, inv_std, x.shape().SizeTo(axis), length,
                                StreamOf(ctx)),
                "RMS normalization launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  bool skip_;
  int64_t axis_;
  float epsilon_;
};

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry) {
  const auto rms = [](bool skip) {
    return [skip](const KernelInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<RmsNormKernel>(info, skip); };
  };
  registry.Register(MakeDef("RMSNormalization", 23, INT_MAX, FloatTypes()), rms(false));
  for (const char* domain : {"com.microsoft", ""}) {  // ONNX Runtime writes SimplifiedLayerNormalization unprefixed
    KernelDef simplified = MakeDef("SimplifiedLayerNormalization", 1, INT_MAX, FloatTypes());
    simplified.domain = domain;
    registry.Register(std::move(simplified), rms(false));
  }
  KernelDef skip = MakeDef("SkipSimplifiedLayerNormalization", 1, INT_MAX, FloatTypes());
  skip.domain = "com.microsoft";
  registry.Register(std::move(skip), rms(true));
  registry.Register<LayerNormKernel>(MakeDef("LayerNormalization", 17, INT_MAX, FloatTypes()));
  // Opsets 6..8 carry is_test / spatial attributes: inference with spatial = 1 is what runs here.
  registry.Register<BatchNormKernel>(MakeDef("BatchNormalization", 6, INT_MAX, FloatTypes()));
}

}  // namespace tessera::cuda
