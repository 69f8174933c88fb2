// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is coerced to 2-D at `axis` (default 1)
// and each row of the flattened tail is normalized; from opset 13 only the single `axis` (default -1)
// is. Both are an [outer, n, inner] problem normalized along n. Float rows along the last axis (inner = 1, the
// attention case) and float middle axes (runs of up to 256 columns at once, in parallel) take vectorized paths
// compiled for AVX-512, AVX2 and baseline x86-64 (chosen at load time).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/common/vector_math.h"
#include "providers/cpu/cpu_kernels.h"

// MaxLanes below stays inside this file's functions (each compiled once per instruction set), so GCC's note that
// 64-byte vectors pass differently with and without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

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

// Lanes of the partial maxima and sums below: independent accumulators the compiler keeps in vector registers
// (a single float accumulator would serialize the loop, since float addition is not reassociated).
constexpr int64_t kLanes = 16;

// A vector of kLanes floats (one AVX-512 register, two AVX2 ones); the lanewise select below compiles to vmaxps-like
// blends, which the scalar-lane form of the loop did not (it stayed scalar).
typedef float MaxLanes __attribute__((vector_size(kLanes * sizeof(float))));

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
float RowMax(const float* x, int64_t n) {
  MaxLanes lanes;
  for (int64_t l = 0; l < kLanes; ++l) lanes[l] = std::numeric_limits<float>::lowest();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    MaxLanes v;
    std::memcpy(&v, x + i, sizeof(v));
    lanes = lanes < v ? v : lanes;  // NaN in x leaves the lane as is, as std::max(max, x) does
  }
  float max = std::numeric_limits<float>::lowest();
  for (int64_t l = 0; l < kLanes; ++l) max = std::max(max, lanes[l]);
  for (; i < n; ++i) max = std::max(max, x[i]);
  return max;
}

// y[i] = exp(x[i] - shift) (y may be null); returns the sum of those exponentials.
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
float ExpShifted(const float* x, float* y, int64_t n, float shift) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) {
      const float e = Exp(x[i + l] - shift);
      if (y) y[i + l] = e;
      lanes[l] += e;
    }
  float sum = 0.0f;
  for (int64_t l = 0; l < kLanes; ++l) sum += lanes[l];
  for (; i < n; ++i) {
    const float e = Exp(x[i] - shift);
    if (y) y[i] = e;
    sum += e;
  }
  return sum;
}

// y = x - max - log_sum (LogSoftmax; subtracted one at a time: exact where max + log_sum would round log_sum away,
// |max| ~ 1e30), or y *= scale (Softmax) when x is null.
TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void ScaleOrShift(float* y, const float* x, int64_t n, float scale, float max, float log_sum) {
  if (x) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - max) - log_sum;
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  }
}

// Columns [0, width) of an [n, inner] float block (x and y point at its first column; width <= kColumns), normalized
// along n: the loops run across the columns, which are contiguous, so they vectorize (a middle axis, e.g. the
// 16 bins of a detector's distribution head over thousands of anchors).
constexpr int64_t kColumns = 256;

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void NormalizeColumns(const float* x, float* y, int64_t n, int64_t inner, int64_t width, bool log) {
  float max[kColumns], sum[kColumns];
  std::fill_n(max, width, std::numeric_limits<float>::lowest());
  std::fill_n(sum, width, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < width; ++j) max[j] = Select(max[j] < x[i * inner + j], x[i * inner + j], max[j]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < width; ++j) {
      const float e = Exp(x[i * inner + j] - max[j]);
      if (!log) y[i * inner + j] = e;
      sum[j] += e;
    }
  if (!log) {
    for (int64_t j = 0; j < width; ++j) sum[j] = 1.0f / sum[j];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < width; ++j) y[i * inner + j] *= sum[j];
  } else {
    for (int64_t j = 0; j < width; ++j) sum[j] = std::log(sum[j]);  // (x - max) - log(sum), as ScaleOrShift
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < width; ++j) y[i * inner + j] = (x[i * inner + j] - max[j]) - sum[j];
  }
}

// Rows shorter than kShortRow (a detector's two-class scores over thousands of anchors): kLanes rows at a time, the
// loops running across the rows so they vectorize (a row-at-a-time loop pays three calls per two elements).
constexpr int64_t kShortRow = 8;

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void NormalizeShortRows(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  int64_t r0 = 0;
  for (; r0 + kLanes <= rows; r0 += kLanes) {
    const float* xr = x + r0 * n;
    float* yr = y + r0 * n;
    float max[kLanes], sum[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) max[l] = std::numeric_limits<float>::lowest(), sum[l] = 0.0f;
    for (int64_t k = 0; k < n; ++k)
      for (int64_t l = 0; l < kLanes; ++l) max[l] = Select(max[l] < xr[l * n + k], xr[l * n + k], max[l]);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t l = 0; l < kLanes; ++l) {
        const float e = Exp(xr[l * n + k] - max[l]);
        if (!log) yr[l * n + k] = e;
        sum[l] += e;
      }
    if (log) {  // (x - max) - log(sum): exact where max + log(sum) would round away log(sum) (|max| ~ 1e30)
      for (int64_t l = 0; l < kLanes; ++l) sum[l] = std::log(sum[l]);
      for (int64_t k = 0; k < n; ++k)
        for (int64_t l = 0; l < kLanes; ++l) yr[l * n + k] = (xr[l * n + k] - max[l]) - sum[l];
    } else {
      for (int64_t l = 0; l < kLanes; ++l) sum[l] = 1.0f / sum[l];
      for (int64_t k = 0; k < n; ++k)
        for (int64_t l = 0; l < kLanes; ++l) yr[l * n + k] *= sum[l];
    }
  }
  for (; r0 < rows; ++r0) {  // the last rows, one at a time
    const float* xr = x + r0 * n;
    float* yr = y + r0 * n;
    float max = std::numeric_limits<float>::lowest(), sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) max = std::max(max, xr[k]);
    for (int64_t k = 0; k < n; ++k) {
      const float e = Exp(xr[k] - max);
      if (!log) yr[k] = e;
      sum += e;
    }
    const float scale = 1.0f / sum, log_sum = std::log(sum);
    for (int64_t k = 0; k < n; ++k) yr[k] = log ? (xr[k] - max) - log_sum : yr[k] * scale;
  }
}

// Softmax or LogSoftmax of one contiguous float row.
template <SoftmaxKind Kind>
void NormalizeRow(const float* x, float* y, int64_t n) {
  const float max = RowMax(x, n);
  if constexpr (Kind == SoftmaxKind::kSoftmax) {
    ScaleOrShift(y, nullptr, n, 1.0f / ExpShifted(x, y, n, max), 0.0f, 0.0f);
  } else {
    ScaleOrShift(y, x, n, 0.0f, max, std::log(ExpShifted(x, nullptr, n, max)));
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
    if constexpr (std::is_same_v<T, float> && Kind != SoftmaxKind::kHardmax) {
      if (l.inner == 1 && l.n < kShortRow) {
        ctx.thread_pool().ParallelFor(l.outer, std::max<int64_t>(kLanes, 8192 / block), [&](int64_t begin, int64_t end) {
          NormalizeShortRows(x + begin * block, y + begin * block, end - begin, l.n, Kind == SoftmaxKind::kLogSoftmax);
        });
        return;
      }
      if (l.inner == 1) {
        ctx.thread_pool().ParallelFor(l.outer, std::max<int64_t>(1, 8192 / block), [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o) NormalizeRow<Kind>(x + o * block, y + o * block, l.n);
        });
        return;
      }
      // A middle axis: tasks of up to kColumns columns of one [n, inner] block.
      const int64_t chunks = (l.inner + kColumns - 1) / kColumns;
      ctx.thread_pool().ParallelFor(l.outer * chunks, std::max<int64_t>(1, 8192 / (l.n * kColumns)),
                                    [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t o = t / chunks, first = (t % chunks) * kColumns;
          const int64_t offset = o * block + first;
          NormalizeColumns(x + offset, y + offset, l.n, l.inner, std::min(kColumns, l.inner - first),
                           Kind == SoftmaxKind::kLogSoftmax);
        }
      });
      return;
    }
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
