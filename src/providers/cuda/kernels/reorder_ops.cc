// ai.tessera::ReorderFromBlocked(X) -> Y on the CUDA EP: an NHWC tensor [N, 1, H, W, C] (the CUDA EP's only blocked
// layout, channel block 0; see graph/passes/nchwc_layout.h) back to NCHW [N, C, H, W], C being attribute `channels`.
// The nchwc_layout pass puts one wherever an NHWC value is read by an op that needs NCHW, and before graph outputs.
#include <climits>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {
namespace {

class ReorderFromBlockedKernel : public Kernel {
 public:
  explicit ReorderFromBlockedKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), channels_(info.node().GetInt("channels", -1)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Shape& s = x.shape();
    if (s.rank() != 5 || s[1] != 1 || (channels_ >= 0 && channels_ != s[4]))
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": the CUDA kernel reorders NHWC tensors [N, 1, H, W, C] ",
           "of all their channels, not ", s.ToString(), " with channels = ", channels_);
    Tensor& y = ctx.Output(0, x.type(), Shape{s[0], s[4], s[2], s[3]});
    if (y.NumElements() == 0) return;
    const int64_t out_dims[4] = {s[0], s[4], s[2], s[3]};
    const int64_t in_strides[4] = {s[2] * s[3] * s[4], 1, s[3] * s[4], s[4]};  // x's strides in NCHW order
    CheckLaunch(ctx,
                launch::Transpose(static_cast<int>(SizeOf(x.type())), x.raw_data(), y.raw_data(), 4, out_dims,
                                  in_strides, y.NumElements(), StreamOf(ctx)),
                "ReorderFromBlocked launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  int64_t channels_;
};

}  // namespace

void RegisterReorderKernels(KernelRegistry& registry) {
  KernelDef def = MakeDef("ReorderFromBlocked", 1, INT_MAX, FloatTypes());
  def.domain = "ai.tessera";
  registry.Register<ReorderFromBlockedKernel>(std::move(def));
}

}  // namespace tessera::cuda
