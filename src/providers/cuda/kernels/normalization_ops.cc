// BatchNormalization in inference mode (one output; training_mode = 0) and LayerNormalization (output Y
// only; scale and bias of the normalized size, each float32 or float16 independently of X).
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

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry) {
  registry.Register<LayerNormKernel>(MakeDef("LayerNormalization", 17, INT_MAX, FloatTypes()));
  // Opsets 6..8 carry is_test / spatial attributes: inference with spatial = 1 is what runs here.
  registry.Register<BatchNormKernel>(MakeDef("BatchNormalization", 6, INT_MAX, FloatTypes()));
}

}  // namespace tessera::cuda
