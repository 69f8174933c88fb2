// Softmax and LogSoftmax (opset < 13: over the input flattened to 2-D at `axis`; 13+: along `axis`).
#include <climits>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

class SoftmaxKernel : public Kernel {
 public:
  SoftmaxKernel(const KernelInfo& info, bool log)
      : ep_(CudaEpOf(info)),
        log_(log),
        coerce_2d_(info.node().opset < 13),
        axis_(info.node().GetInt("axis", info.node().opset < 13 ? 1 : -1)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    Tensor& y = ctx.Output(0, x.type(), shape);
    if (y.NumElements() == 0) return;
    const int64_t rank = static_cast<int64_t>(shape.rank());
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, std::max<int64_t>(rank, 1), "Softmax axis"));
    const int64_t outer = shape.SizeTo(axis);
    const int64_t length = coerce_2d_ ? shape.SizeFrom(axis) : (rank == 0 ? 1 : shape[axis]);
    const int64_t inner = coerce_2d_ || rank == 0 ? 1 : shape.SizeFrom(axis + 1);
    CheckLaunch(ctx,
                launch::Softmax(FloatElementType(ctx, x.type()), x.raw_data(), y.raw_data(), outer, length, inner, log_,
                                StreamOf(ctx)),
                "softmax launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  bool log_;
  bool coerce_2d_;
  int64_t axis_;
};

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry& registry) {
  for (const bool log : {false, true})
    registry.Register(MakeDef(log ? "LogSoftmax" : "Softmax", 1, INT_MAX, FloatTypes()),
                      [log](const KernelInfo& info) { return std::make_unique<SoftmaxKernel>(info, log); });
}

}  // namespace tessera::cuda
