// CumSum (opset 11, 14) and CumProd (opset 26): running sums / products along one axis, optionally exclusive (each
// output omits its own element: the first is 0 / 1) and/or reversed (they run from the end). The input is an [outer, n, inner] problem; the
// inner dimension is the contiguous one, so each step adds a whole row of `inner` values.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"

namespace tessera::cpu {
namespace {

class CumSum : public Kernel {
 public:
  explicit CumSum(const KernelInfo& info)
      : product_(info.node().op_type == "CumProd"),
        exclusive_(info.node().GetInt("exclusive", 0) != 0),
        reverse_(info.node().GetInt("reverse", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const std::vector<int64_t> axis_value = ReadIntParameter(ctx.node(), ctx.Input(1), "axis");
    if (axis_value.size() != 1)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axis must be a scalar, got ", axis_value.size(),
           " values");
    const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(x.shape().rank()));
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_value[0], rank));
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (x.NumElements() == 0) return;
    const bool scalar = x.shape().rank() == 0;
    const int64_t outer = scalar ? 1 : x.shape().SizeTo(axis), n = scalar ? 1 : x.shape()[axis];
    const int64_t inner = scalar ? 1 : x.shape().SizeFrom(axis + 1);
    VisitNumericType(ctx.node(), x.type(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": bool input is not supported");
      } else {
        Run<T>(ctx, static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), outer, n, inner);
      }
    });
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx, const T* x, T* y, int64_t outer, int64_t n, int64_t inner) const {
    using Acc = decltype(Widen(T{}));
    ctx.thread_pool().ParallelFor(outer, std::max<int64_t>(1, 16384 / (n * inner)), [&](int64_t begin, int64_t end) {
      std::vector<Acc> sum(static_cast<size_t>(inner));
      for (int64_t o = begin; o < end; ++o) {
        std::fill(sum.begin(), sum.end(), product_ ? Acc{1} : Acc{0});
        for (int64_t step = 0; step < n; ++step) {
          const int64_t i = reverse_ ? n - 1 - step : step;
          const T* xr = x + (o * n + i) * inner;
          T* yr = y + (o * n + i) * inner;
          if (exclusive_) {
            for (int64_t j = 0; j < inner; ++j) {
              yr[j] = Narrow<T>(sum[j]);
              sum[j] = Step<Acc>(sum[j], Widen(xr[j]));
            }
          } else {
            for (int64_t j = 0; j < inner; ++j) {
              sum[j] = Step<Acc>(sum[j], Widen(xr[j]));
              yr[j] = Narrow<T>(sum[j]);
            }
          }
        }
      }
    });
  }

  // sum + x or sum * x; integers wrap around (in unsigned arithmetic) instead of overflowing.
  template <typename Acc>
  Acc Step(Acc sum, Acc x) const {
    if constexpr (std::is_integral_v<Acc>) {
      using U = std::make_unsigned_t<Acc>;
      return static_cast<Acc>(product_ ? static_cast<U>(static_cast<U>(sum) * static_cast<U>(x))
                                       : static_cast<U>(static_cast<U>(sum) + static_cast<U>(x)));
    } else {
      return product_ ? static_cast<Acc>(sum * x) : static_cast<Acc>(sum + x);
    }
  }

  bool product_;
  bool exclusive_;
  bool reverse_;
};

}  // namespace

void RegisterCumSumKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "CumSum";
  def.since_version = 11;
  def.host_inputs = {1};
  KernelDef product = def;
  product.op_type = "CumProd";
  product.since_version = 26;
  registry.Register<CumSum>(std::move(def));
  registry.Register<CumSum>(std::move(product));
}

}  // namespace tessera::cpu
