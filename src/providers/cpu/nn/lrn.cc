// LRN (opset 1, 13): local response normalization across channels of X [N, C, ...]:
//   y = x / (bias + alpha / size * sum_{c' in window(c)} x[c']^2) ^ beta
// with the window [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the channels.
#include <algorithm>
#include <cmath>
#include <vector>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

class Lrn : public Kernel {
 public:
  explicit Lrn(const KernelInfo& info)
      : alpha_(info.node().GetFloat("alpha", 1e-4f)),
        beta_(info.node().GetFloat("beta", 0.75f)),
        bias_(info.node().GetFloat("bias", 1.0f)),
        size_(info.node().GetInt("size")) {
    if (size_ <= 0) Fail(ErrorCode::kInvalidModel, info.node().Describe(), ": size must be > 0");
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    if (x.shape().rank() < 3)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input must be [N, C, D1, ...], got ",
           x.shape().ToString());
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    const int64_t n = x.shape()[0], c = x.shape()[1], spatial = x.shape().SizeFrom(2);
    const float* xd = x.Data<float>();
    float* yd = y.Data<float>();
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    const float scale = alpha_ / static_cast<float>(size_);
    ctx.thread_pool().ParallelFor(n * c, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> square_sum(static_cast<size_t>(spatial));
      for (int64_t nc = begin; nc < end; ++nc) {
        const int64_t b = nc / c, ch = nc % c;
        std::fill(square_sum.begin(), square_sum.end(), 0.0f);
        for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
          const float* xk = xd + (b * c + k) * spatial;
          for (int64_t s = 0; s < spatial; ++s) square_sum[s] += xk[s] * xk[s];
        }
        const float* xc = xd + nc * spatial;
        float* yc = yd + nc * spatial;
        for (int64_t s = 0; s < spatial; ++s) yc[s] = xc[s] / std::pow(bias_ + scale * square_sum[s], beta_);
      }
    });
  }

 private:
  float alpha_, beta_, bias_;
  int64_t size_;
};

}  // namespace

void RegisterLrnKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "LRN";
  def.input_types = {{0, {DataType::kFloat}}};
  registry.Register<Lrn>(std::move(def));
}

}  // namespace tessera::cpu
