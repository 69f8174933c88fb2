// Dropout, opsets 1 to latest.
//
// Inference (the default, and the only mode before opset 12, whose `is_test` attribute is ignored: this
// runtime never trains) passes the input through unchanged and reports a mask of all ones. Training mode
// (opset 12+: input training_mode = true) zeroes each element with probability `ratio` and scales the
// kept ones by 1 / (1 - ratio); the mask marks the kept elements. Draws come from common/counter_rng.h,
// so a `seed` attribute makes them repeatable.
#include <algorithm>

#include "providers/cpu/common/counter_rng.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

class DropoutKernel : public Kernel {
 public:
  explicit DropoutKernel(const KernelInfo& info)
      : seeds_(info.node()),
        ratio_attribute_(info.node().GetFloat("ratio", 0.5f)),
        wants_mask_(info.node().outputs.size() > 1 && !info.node().outputs[1].empty()) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Node& node = ctx.node();
    const bool training =
        node.opset >= 12 && ctx.HasInput(2) && ReadScalarAsDouble(node, ctx.Input(2), "training_mode") != 0;
    const double ratio =
        node.opset >= 12 && ctx.HasInput(1) ? ReadScalarAsDouble(node, ctx.Input(1), "ratio") : ratio_attribute_;
    if (!training || ratio == 0) {
      ctx.SetOutput(0, *ctx.InputValue(0));
      if (wants_mask_) FillMaskWithOnes(ctx, x);
      return;
    }
    if (!(ratio > 0 && ratio < 1))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ratio must be in [0, 1), got ", ratio);
    DispatchType(x.type(), FloatTypes{}, node,
                 [&](auto tag) { DropElements<typename decltype(tag)::type>(ctx, x, ratio); });
  }

 private:
  // Before opset 10 the mask has the data's type; since then it is bool.
  static DataType MaskType(const Node& node, const Tensor& x) { return node.opset < 10 ? x.type() : DataType::kBool; }

  void FillMaskWithOnes(KernelContext& ctx, const Tensor& x) const {
    Tensor& mask = ctx.Output(1, MaskType(ctx.node(), x), x.shape());
    if (mask.type() == DataType::kBool) {
      std::fill_n(mask.Data<bool>(), mask.NumElements(), true);
      return;
    }
    DispatchType(mask.type(), FloatTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::fill_n(mask.Data<T>(), mask.NumElements(), Store<T>(1.0f));
    });
  }

  template <typename T>
  void DropElements(KernelContext& ctx, const Tensor& x, double ratio) const {
    const CounterRng rng(seeds_.Next());
    const T* in = x.Data<T>();
    T* out = ctx.Output(0, x.type(), x.shape()).template Data<T>();
    bool* mask = wants_mask_ ? ctx.Output(1, DataType::kBool, x.shape()).template Data<bool>() : nullptr;
    using C = ComputeType<T>;
    const auto scale = static_cast<C>(1.0 / (1.0 - ratio));
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const bool keep = rng.Uniform(static_cast<uint64_t>(i)) >= ratio;
        out[i] = Store<T>(keep ? Load(in[i]) * scale : C(0));
        if (mask != nullptr) mask[i] = keep;
      }
    };
    ctx.thread_pool().ParallelFor(x.NumElements(), kElementwiseGrain, run);
  }

  SeedSource seeds_;
  float ratio_attribute_;
  bool wants_mask_;
};

}  // namespace

void RegisterDropoutKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "Dropout";
  def.since_version = 1;
  def.until_version = kLatestOpset;
  def.input_types = {{0, DataTypesOf(FloatTypes{})}};
  def.host_inputs = {1, 2};
  def.may_alias = true;
  registry.Register<DropoutKernel>(std::move(def));
}

}  // namespace tessera::cpu
