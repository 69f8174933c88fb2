// MeanVarianceNormalization (opset 9+): Y = (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9), the expectations
// taken over attribute `axes` (default [0, 2, 3]), as the op's ONNX function body computes it (except that a
// variance made slightly negative by rounding counts as 0 instead of giving NaN).
#include <algorithm>
#include <cmath>
#include <vector>

#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

// The ONNX function adds this to the standard deviation.
constexpr double kEpsilon = 1e-9;

class MeanVarianceNormalizationKernel : public Kernel {
 public:
  explicit MeanVarianceNormalizationKernel(const KernelInfo& info) : axes_(info.node().GetInts("axes", {0, 2, 3})) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const std::vector<int64_t> group = GroupOffsets(x.shape());
    DispatchType(x.type(), FloatTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Normalize(x.Data<T>(), ctx.Output(0, x.type(), x.shape()).template Data<T>(), group);
    });
  }

 private:
  // For every element, the index of its group (the elements that share all non-reduced coordinates).
  std::vector<int64_t> GroupOffsets(const Shape& shape) const {
    const auto rank = static_cast<int64_t>(shape.rank());
    std::vector<bool> reduced(shape.rank(), false);
    for (int64_t axis : axes_) reduced[static_cast<size_t>(NormalizeAxis(axis, rank, "axes"))] = true;
    // Group index = the element's coordinates along kept dims, in row-major order of those dims.
    std::vector<int64_t> stride(shape.rank(), 0);
    int64_t groups = 1;
    for (size_t d = shape.rank(); d-- > 0;) {
      if (reduced[d]) continue;
      stride[d] = groups;
      groups *= shape[d];
    }
    std::vector<int64_t> offsets(static_cast<size_t>(shape.NumElements()));
    std::vector<int64_t> index(shape.rank(), 0);
    int64_t group = 0;
    for (size_t i = 0; i < offsets.size(); ++i) {
      offsets[i] = group;
      for (size_t d = shape.rank(); d-- > 0;) {
        group += stride[d];
        if (++index[d] < shape[d]) break;
        group -= stride[d] * shape[d];
        index[d] = 0;
      }
    }
    return offsets;
  }

  template <typename T>
  static void Normalize(const T* x, T* y, const std::vector<int64_t>& group) {
    int64_t groups = 0;
    for (int64_t g : group) groups = std::max(groups, g + 1);
    std::vector<double> sum(static_cast<size_t>(groups), 0.0), sum_squares(sum.size(), 0.0), count(sum.size(), 0.0);
    for (size_t i = 0; i < group.size(); ++i) {
      const auto v = static_cast<double>(Load(x[i]));
      sum[group[i]] += v;
      sum_squares[group[i]] += v * v;
      count[group[i]] += 1;
    }
    for (size_t g = 0; g < sum.size(); ++g) {
      const double mean = sum[g] / count[g];
      sum[g] = mean;
      sum_squares[g] = std::sqrt(std::max(0.0, sum_squares[g] / count[g] - mean * mean)) + kEpsilon;
    }
    for (size_t i = 0; i < group.size(); ++i) {
      y[i] = Store<T>((static_cast<double>(Load(x[i])) - sum[group[i]]) / sum_squares[group[i]]);
    }
  }

  std::vector<int64_t> axes_;
};

}  // namespace

void RegisterMeanVarianceNormalizationKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "MeanVarianceNormalization";
  def.since_version = 9;
  def.until_version = kLatestOpset;
  def.input_types = {{0, DataTypesOf(FloatTypes{})}};
  registry.Register<MeanVarianceNormalizationKernel>(std::move(def));
}

}  // namespace tessera::cpu
