// ONNX Runtime's com.microsoft Gelu family on the CUDA EP, with the CPU EP's semantics
// (providers/cpu/math/activations.cc): Gelu (exact, no bias), BiasGelu (exact, bias required), FastGelu (tanh
// approximation, bias optional) and QuickGelu (x * sigmoid(alpha * x), alpha default 1.702; also ONNX Swish-24, alpha
// default 1). A bias is a 1-D tensor
// of X's last dim and type, added in float before the activation.
#include <climits>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

enum class Form { kGelu, kBiasGelu, kFastGelu, kQuickGelu };

class ContribGeluKernel : public Kernel {
 public:
  ContribGeluKernel(const KernelInfo& info, Form form)
      : ep_(CudaEpOf(info)),
        form_(form),
        alpha_(info.node().GetFloat("alpha", info.node().op_type == "Swish" ? 1.0f : 1.702f)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const bool takes_bias = form_ == Form::kBiasGelu || form_ == Form::kFastGelu;
    const Tensor* bias = takes_bias ? ctx.OptionalInput(1) : nullptr;
    if (form_ == Form::kBiasGelu && bias == nullptr)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": BiasGelu needs its bias input");
    const int64_t width = x.shape().rank() == 0 ? 1 : x.shape()[x.shape().rank() - 1];
    if (bias != nullptr && (bias->type() != x.type() || bias->NumElements() != width || bias->shape().rank() != 1))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": the bias is ", bias->Describe(), ", expected ",
           DataTypeName(x.type()), " [", width, "] (the last dim of X ", x.shape().ToString(), ")");
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (y.NumElements() == 0) return;
    const launch::BiasActivationKind kind = form_ == Form::kFastGelu    ? launch::BiasActivationKind::kGeluTanh
                                            : form_ == Form::kQuickGelu ? launch::BiasActivationKind::kQuickGelu
                                                                        : launch::BiasActivationKind::kGeluErf;
    CheckLaunch(ctx,
                launch::BiasActivation(kind, FloatElementType(ctx, x.type()), x.raw_data(),
                                       bias ? bias->raw_data() : nullptr, y.raw_data(), y.NumElements(), width, alpha_,
                                       StreamOf(ctx)),
                "Gelu (com.microsoft) launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  Form form_;
  float alpha_;
};

}  // namespace

void RegisterContribActivationKernels(KernelRegistry& registry) {
  for (const auto& [name, form] : {std::pair{"Gelu", Form::kGelu}, std::pair{"BiasGelu", Form::kBiasGelu},
                                    std::pair{"FastGelu", Form::kFastGelu}, std::pair{"QuickGelu", Form::kQuickGelu}}) {
    KernelDef def = MakeDef(name, 1, INT_MAX, FloatTypes());
    def.domain = "com.microsoft";
    registry.Register(std::move(def), [form = form](const KernelInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<ContribGeluKernel>(info, form);
    });
  }
  // ONNX Swish (opset 24): QuickGelu's function with alpha 1 by default.
  registry.Register(MakeDef("Swish", 24, INT_MAX, FloatTypes()), [](const KernelInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<ContribGeluKernel>(info, Form::kQuickGelu);
  });
}

}  // namespace tessera::cuda
