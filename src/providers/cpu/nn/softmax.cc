// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is coerced to 2-D at `axis` (default 1)
// and each row of the flattened tail is normalized; from opset 13 only the single `axis` (default -1)
// is. Both are an [outer, n, inner] problem normalized along n.
#include <algorithm>
#include <cmath>
#include <limits>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

struct SoftmaxLayout {
  int64_t outer, n, inner;
};

// Normalizes one [n, inner] block of x into y; `scratch` holds 2 * inner values.
template <SoftmaxKind Kind, typename T>
void NormalizeBlock(const T* x, T* y, int64_t n, int64_t inner, std::vector<T>& scratch) {
  T* max = scratch.data();
  T* sum = scratch.data() + inner;
  std::fill_n(max, inner, std::numeric_limits<T>::lowest());
  std::fill_n(sum, inner, T{0});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) max[j] = std::max(max[j], x[i * inner + j]);
  if constexpr (Kind == SoftmaxKind::kHardmax) {
    std::fill_n(y, n * inner, T{0});
    for (int64_t j = 0; j < inner; ++j)
      for (int64_t i = 0; i < n; ++i)
        if (x[i * inner + j] == max[j]) {
          y[i * inner + j] = T{1};
          break;
        }
  } else {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) {
        const T e = std::exp(x[i * inner + j] - max[j]);
        if constexpr (Kind == SoftmaxKind::kSoftmax) y[i * inner + j] = e;
        sum[j] += e;
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) {
        if constexpr (Kind == SoftmaxKind::kSoftmax) y[i * inner + j] /= sum[j];
        else y[i * inner + j] = x[i * inner + j] - max[j] - std::log(sum[j]);
      }
  }
}

template <SoftmaxKind Kind>
class Softmax : public Kernel {
 public:
  explicit Softmax(const KernelInfo& info)
      : coerce_2d_(info.node().opset < 13), axis_(info.node().GetInt("axis", coerce_2d_ ? 1 : -1)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (x.NumElements() == 0) return;
    const SoftmaxLayout layout = Layout(x.shape());
    if (x.type() == DataType::kFloat) Run<float>(ctx, layout, x.Data<float>(), y.Data<float>());
    else Run<double>(ctx, layout, x.Data<double>(), y.Data<double>());
  }

 private:
  SoftmaxLayout Layout(const Shape& shape) const {
    const int64_t rank = static_cast<int64_t>(shape.rank());
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, std::max<int64_t>(rank, 1)));
    if (rank == 0) return {1, 1, 1};
    if (coerce_2d_) return {shape.SizeTo(axis), shape.SizeFrom(axis), 1};
    return {shape.SizeTo(axis), shape[axis], shape.SizeFrom(axis + 1)};
  }

  template <typename T>
  static void Run(KernelContext& ctx, const SoftmaxLayout& l, const T* x, T* y) {
    const int64_t block = l.n * l.inner;
    ctx.thread_pool().ParallelFor(l.outer, std::max<int64_t>(1, 8192 / block), [&](int64_t begin, int64_t end) {
      std::vector<T> scratch(2 * l.inner);
      for (int64_t o = begin; o < end; ++o) NormalizeBlock<Kind>(x + o * block, y + o * block, l.n, l.inner, scratch);
    });
  }

  bool coerce_2d_;
  int64_t axis_;
};

template <SoftmaxKind Kind>
void RegisterSoftmax(KernelRegistry& registry, const char* op) {
  KernelDef def;
  def.op_type = op;
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble}}};
  registry.Register<Softmax<Kind>>(std::move(def));
}

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry& registry) {
  RegisterSoftmax<SoftmaxKind::kSoftmax>(registry, "Softmax");
  RegisterSoftmax<SoftmaxKind::kLogSoftmax>(registry, "LogSoftmax");
  RegisterSoftmax<SoftmaxKind::kHardmax>(registry, "Hardmax");
}

}  // namespace tessera::cpu
