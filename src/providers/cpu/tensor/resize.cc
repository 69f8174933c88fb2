// Resize (opset 10-19) and Upsample (opset 7-9): nearest, N-linear and N-cubic interpolation over any
// axes, every coordinate_transformation_mode, roi cropping with an extrapolation value, scales or sizes
// (with `axes` and keep_aspect_ratio_policy) and antialiasing for linear and cubic.
//
// Each axis is planned once per run: the source coordinate of every output coordinate along it.
// - Nearest turns that into one input offset per output coordinate and fills the output row by row
//   with a gather; a row whose source row equals the previous one (upsampling) is a memcpy.
// - Linear and cubic are separable: the plan becomes a few (source index, weight) taps per output
//   coordinate and the tensor is resampled one axis at a time, most-shrinking axis first. Along any
//   axis but the last a pass blends whole contiguous rows, which vectorizes.
// Both spread rows over the intra-op thread pool.
//
// Coordinates follow the ONNX reference: computed in float, with the resized length of an axis being
// in * scale when scales are given and the requested size when sizes are given. Opset < 11 (Upsample,
// Resize-10) uses asymmetric coordinates and, for nearest, floor when upsampling, ceil when downsampling.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/tensor/numeric_dispatch.h"
#include "providers/cpu/tensor/strided_copy.h"
#include "tessera/ep/resize_geometry.h"

namespace tessera::cpu {
namespace {

// The shared geometry (tessera/ep/resize_geometry.h) under this file's short names.
using InterpolationMode = ResizeInterpolation;
using CoordinateMode = ResizeCoordinateMode;
using NearestMode = ResizeNearestMode;
using AxisGeometry = ResizeAxis;
using AxisTaps = ResizeTaps;

// The values of optional host input `index` as doubles; empty when the input is absent or empty.
std::vector<double> ReadOptionalNumbers(const KernelContext& ctx, int index) {
  const Tensor* t = index >= 0 ? ctx.OptionalInput(static_cast<size_t>(index)) : nullptr;
  if (!t || t->NumElements() == 0) return {};
  return VisitNumericType(ctx.node(), t->type(), [&]<typename T>() {
    const T* data = static_cast<const T*>(t->raw_data());
    std::vector<double> values(static_cast<size_t>(t->NumElements()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(Widen(data[i]));
    return values;
  });
}

// ---- nearest ------------------------------------------------------------------------------------

// Per axis, the input element offset (index * stride) each output coordinate reads; -1 where the
// output takes the extrapolation value.
std::vector<std::vector<int64_t>> NearestOffsets(const ResizeAttributes& a, const std::vector<AxisGeometry>& g) {
  std::vector<std::vector<int64_t>> offsets(g.size());
  int64_t stride = 1;
  for (size_t d = g.size(); d-- > 0;) {
    const AxisTaps taps = MakeResizeTaps(a, g[d]);  // nearest: one tap per output coordinate
    offsets[d].resize(static_cast<size_t>(g[d].out));
    for (size_t o = 0; o < offsets[d].size(); ++o) offsets[d][o] = taps.extrapolated[o] ? -1 : taps.index[o] * stride;
    stride *= g[d].in;
  }
  return offsets;
}

// At least this many elements per parallel task.
int64_t Grain(int64_t work_per_item) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, work_per_item)); }

// Calls fn(row, coord) for rows [begin, end) of a tensor with `dims` (a row spans the last axis);
// coord holds the row's coordinates along the leading axes.
template <typename Fn>
void ForEachRow(const std::vector<int64_t>& dims, int64_t begin, int64_t end, Fn&& fn) {
  const size_t lead = dims.size() - 1;
  std::vector<int64_t> coord(lead);
  for (int64_t rest = begin, d = static_cast<int64_t>(lead) - 1; d >= 0; --d) {
    coord[static_cast<size_t>(d)] = rest % dims[static_cast<size_t>(d)];
    rest /= dims[static_cast<size_t>(d)];
  }
  for (int64_t row = begin; row < end; ++row) {
    fn(row, coord);
    for (size_t d = lead; d-- > 0;) {
      if (++coord[d] < dims[d]) break;
      coord[d] = 0;
    }
  }
}

int64_t NumRows(const std::vector<int64_t>& dims) {
  return std::reduce(dims.begin(), dims.end() - 1, int64_t{1}, std::multiplies<>());
}

// S is the element's storage type (nearest only moves elements).
template <typename S>
void ResizeNearest(const std::vector<std::vector<int64_t>>& offsets, const std::vector<int64_t>& out_dims,
                   int64_t in_width, const S* x, S* y, S extrapolation, const ThreadPool& pool) {
  const int64_t width = out_dims.back();
  const std::vector<int64_t>& columns = offsets.back();
  const bool columns_extrapolate = std::any_of(columns.begin(), columns.end(), [](int64_t c) { return c < 0; });
  bool columns_identity = width == in_width;
  for (int64_t i = 0; columns_identity && i < width; ++i) columns_identity = columns[static_cast<size_t>(i)] == i;
  const size_t lead = out_dims.size() - 1;
  pool.ParallelFor(NumRows(out_dims), Grain(width), [&](int64_t begin, int64_t end) {
    int64_t previous_source = -1;
    const S* previous_row = nullptr;
    ForEachRow(out_dims, begin, end, [&](int64_t row, const std::vector<int64_t>& coord) {
      S* dst = y + row * width;
      int64_t source = 0;
      for (size_t d = 0; d < lead; ++d) {
        const int64_t offset = offsets[d][static_cast<size_t>(coord[d])];
        if (offset < 0) {
          std::fill(dst, dst + width, extrapolation);
          return;
        }
        source += offset;
      }
      if (source == previous_source) {
        std::memcpy(dst, previous_row, static_cast<size_t>(width) * sizeof(S));
        return;
      }
      const S* src = x + source;
      if (columns_identity) {
        std::memcpy(dst, src, static_cast<size_t>(width) * sizeof(S));
      } else if (!columns_extrapolate) {
        for (int64_t i = 0; i < width; ++i) dst[i] = src[columns[static_cast<size_t>(i)]];
      } else {
        for (int64_t i = 0; i < width; ++i) {
          const int64_t c = columns[static_cast<size_t>(i)];
          dst[i] = c < 0 ? extrapolation : src[c];
        }
      }
      previous_source = source;
      previous_row = dst;
    });
  });
}

// ---- linear and cubic ---------------------------------------------------------------------------

// Converts an accumulated value to the output type: integers round to nearest and saturate.
template <typename Dst, typename C>
Dst StoreAs(C v) {
  if constexpr (std::is_integral_v<Dst>) {
    v = std::nearbyint(v);
    if (v <= static_cast<C>(std::numeric_limits<Dst>::min())) return std::numeric_limits<Dst>::min();
    if (v >= static_cast<C>(std::numeric_limits<Dst>::max())) return std::numeric_limits<Dst>::max();
    return static_cast<Dst>(v);
  } else {
    return Narrow<Dst>(v);
  }
}

// Resamples the middle axis of x viewed as [outer, in, inner] into y viewed as [outer, out, inner],
// accumulating in C.
template <typename C, typename Src, typename Dst>
void ResampleAxis(const Src* x, Dst* y, int64_t outer, int64_t in, int64_t inner, const AxisTaps& t,
                  const ThreadPool& pool) {
  const int64_t taps = t.taps, out = static_cast<int64_t>(t.extrapolated.size());
  const std::vector<C> weights(t.weight.begin(), t.weight.end());
  if (inner == 1) {
    pool.ParallelFor(outer, Grain(out * taps), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const Src* src = x + r * in;
        Dst* dst = y + r * out;
        for (int64_t o = 0; o < out; ++o) {
          const int64_t* index = t.index.data() + o * taps;
          const C* w = weights.data() + o * taps;
          C acc = 0;
          for (int64_t k = 0; k < taps; ++k) acc += w[k] * static_cast<C>(Widen(src[index[k]]));
          dst[o] = StoreAs<Dst>(acc);
        }
      }
    });
    return;
  }
  pool.ParallelFor(outer * out, Grain(inner * taps), [&](int64_t begin, int64_t end) {
    std::vector<C> scratch(std::is_same_v<Dst, C> ? 0 : static_cast<size_t>(inner));
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t r = unit / out, o = unit % out;
      C* acc;
      if constexpr (std::is_same_v<Dst, C>) acc = y + unit * inner;
      else acc = scratch.data();
      std::fill(acc, acc + inner, C{0});
      for (int64_t k = 0; k < taps; ++k) {
        const C w = weights[static_cast<size_t>(o * taps + k)];
        if (w == C{0}) continue;
        const Src* src = x + (r * in + t.index[static_cast<size_t>(o * taps + k)]) * inner;
        for (int64_t i = 0; i < inner; ++i) acc[i] += w * static_cast<C>(Widen(src[i]));
      }
      if constexpr (!std::is_same_v<Dst, C>) {
        Dst* dst = y + unit * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] = StoreAs<Dst>(acc[i]);
      }
    }
  });
}

// Overwrites the output elements whose coordinate extrapolates along any axis.
template <typename T>
void FillExtrapolated(const std::vector<AxisTaps>& taps, const std::vector<int64_t>& dims, T value, T* y,
                      const ThreadPool& pool) {
  const int64_t width = dims.back();
  const std::vector<uint8_t>& columns = taps.back().extrapolated;
  pool.ParallelFor(NumRows(dims), Grain(width), [&](int64_t begin, int64_t end) {
    ForEachRow(dims, begin, end, [&](int64_t row, const std::vector<int64_t>& coord) {
      T* dst = y + row * width;
      bool whole_row = false;
      for (size_t d = 0; d < coord.size(); ++d)
        whole_row = whole_row || taps[d].extrapolated[static_cast<size_t>(coord[d])];
      for (int64_t i = 0; i < width; ++i)
        if (whole_row || columns[static_cast<size_t>(i)]) dst[i] = value;
    });
  });
}

// ---- 2-D bilinear ---------------------------------------------------------------------------------

// One axis of the 2-D bilinear path: the two source rows (or columns) and their weights per output coordinate.
struct BilinearAxis {
  std::vector<int64_t> lo, hi;
  std::vector<float> w_lo, w_hi;
};

BilinearAxis MakeBilinearAxis(CoordinateMode mode, const AxisGeometry& g) {
  BilinearAxis b;
  for (int64_t o = 0; o < g.out; ++o) {
    const float x = std::max(ResizeSourceCoordinate(mode, g, o), 0.0f);
    const int64_t lo = std::min(static_cast<int64_t>(x), g.in - 1), hi = std::min(lo + 1, g.in - 1);
    float w_hi = x - static_cast<float>(lo), w_lo = 1.0f - w_hi;
    if (lo == hi) w_lo = w_hi = 0.5f;  // past the last sample: both taps read it
    b.lo.push_back(lo);
    b.hi.push_back(hi);
    b.w_lo.push_back(w_lo);
    b.w_hi.push_back(w_hi);
  }
  return b;
}

// Float32 linear resize of the two innermost axes in one pass, each output the sum of its four neighbours
// weighted by products of the axis weights, in this order:
//   w_lo(x) w_lo(y) X[y_lo][x_lo] + w_hi(x) w_lo(y) X[y_lo][x_hi] + w_lo(x) w_hi(y) X[y_hi][x_lo] + ...
// This is the arithmetic ONNX Runtime's CPU kernel uses for this case; dynamically quantized models requantize
// after such resizes, so a one-ulp difference moves values across quantization steps and grows through the
// network (imgly_isnet_quint8 in the corpus differed from ONNX Runtime by 8.6e-2 with the separable passes).
void ResizeBilinear2d(KernelContext& ctx, CoordinateMode mode, const std::vector<AxisGeometry>& g, const Tensor& x,
                      Tensor& y) {
  const size_t rank = g.size();
  const BilinearAxis rows = MakeBilinearAxis(mode, g[rank - 2]), cols = MakeBilinearAxis(mode, g[rank - 1]);
  const int64_t in_h = g[rank - 2].in, in_w = g[rank - 1].in, out_h = g[rank - 2].out, out_w = g[rank - 1].out;
  const int64_t planes = x.NumElements() / (in_h * in_w);
  const float* src = x.Data<float>();
  float* dst = y.Data<float>();
  ctx.thread_pool().ParallelFor(planes * out_h, Grain(out_w * 4), [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t plane = unit / out_h, oy = unit % out_h;
      const float* top = src + (plane * in_h + rows.lo[static_cast<size_t>(oy)]) * in_w;
      const float* bottom = src + (plane * in_h + rows.hi[static_cast<size_t>(oy)]) * in_w;
      const float wy_lo = rows.w_lo[static_cast<size_t>(oy)], wy_hi = rows.w_hi[static_cast<size_t>(oy)];
      float* out = dst + unit * out_w;
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const size_t c = static_cast<size_t>(ox);
        const float wx_lo = cols.w_lo[c], wx_hi = cols.w_hi[c];
        const int64_t lo = cols.lo[c], hi = cols.hi[c];
        out[ox] = wx_lo * wy_lo * top[lo] + wx_hi * wy_lo * top[hi] + wx_lo * wy_hi * bottom[lo] +
                  wx_hi * wy_hi * bottom[hi];
      }
    }
  });
}

// Whether `ResizeBilinear2d` handles the resize: float32, linear without antialiasing or exclude_outside, only
// the two innermost axes change, coordinates that never extrapolate.
bool IsBilinear2d(const ResizeAttributes& a, const std::vector<AxisGeometry>& g, DataType type) {
  if (type != DataType::kFloat || a.mode != InterpolationMode::kLinear || a.antialias || a.exclude_outside ||
      a.coordinates == CoordinateMode::kTfCropAndResize || g.size() < 2)
    return false;
  for (size_t d = 0; d + 2 < g.size(); ++d)
    if (g[d].in != g[d].out) return false;
  return g[g.size() - 1].in > 0 && g[g.size() - 2].in > 0;
}

template <typename T>
void ResizeInterpolated(KernelContext& ctx, const ResizeAttributes& a, const std::vector<AxisGeometry>& g,
                        const Tensor& x, Tensor& y) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  if (IsBilinear2d(a, g, x.type())) return ResizeBilinear2d(ctx, a.coordinates, g, x, y);
  std::vector<AxisTaps> taps;
  std::vector<size_t> order;  // axes to resample, most-shrinking first
  for (size_t d = 0; d < g.size(); ++d) {
    taps.push_back(MakeResizeTaps(a, g[d]));
    if (!taps.back().identity) order.push_back(d);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t l, size_t r) {
    return static_cast<double>(g[l].out) / static_cast<double>(g[l].in) <
           static_cast<double>(g[r].out) / static_cast<double>(g[r].in);
  });
  if (order.empty()) {
    std::memcpy(y.raw_data(), x.raw_data(), x.SizeInBytes());
    return;
  }
  std::vector<int64_t> dims = x.shape().dims();
  const void* src = x.raw_data();
  Tensor buffers[2];
  for (size_t step = 0; step < order.size(); ++step) {
    const size_t axis = order[step];
    const int64_t outer = std::reduce(dims.begin(), dims.begin() + static_cast<ptrdiff_t>(axis), int64_t{1},
                                      std::multiplies<>());
    const int64_t inner = std::reduce(dims.begin() + static_cast<ptrdiff_t>(axis) + 1, dims.end(), int64_t{1},
                                      std::multiplies<>());
    const int64_t in = dims[axis];
    dims[axis] = g[axis].out;
    const bool first = step == 0, last = step + 1 == order.size();
    void* dst = y.raw_data();
    if (!last) {
      buffers[step % 2] = Tensor::Allocate(DataTypeOf<C>(), Shape(dims), ctx.allocator());
      dst = buffers[step % 2].raw_data();
    }
    // The first pass reads T, the last writes T; intermediates are C.
    auto resample = [&]<typename Src, typename Dst>() {
      ResampleAxis<C>(static_cast<const Src*>(src), static_cast<Dst*>(dst), outer, in, inner, taps[axis],
                      ctx.thread_pool());
    };
    if (first && last) resample.template operator()<T, T>();
    else if (first) resample.template operator()<T, C>();
    else if (last) resample.template operator()<C, T>();
    else resample.template operator()<C, C>();
    src = dst;
  }
  if (std::any_of(taps.begin(), taps.end(), [](const AxisTaps& t) { return t.any_extrapolated; }))
    FillExtrapolated(taps, dims, StoreAs<T>(static_cast<C>(a.extrapolation_value)), y.Data<T>(), ctx.thread_pool());
}

class Resize : public Kernel {
 public:
  explicit Resize(const KernelInfo& info) : attrs_(ReadResizeAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const std::vector<double> scales =
        attrs_.scales_input >= 0 ? ReadOptionalNumbers(ctx, attrs_.scales_input) : attrs_.attribute_scales;
    const std::vector<AxisGeometry> g = ResolveResizeGeometry(ctx.node(), attrs_, x.shape(),
                                                        ReadOptionalNumbers(ctx, attrs_.roi_input), scales,
                                                        ReadOptionalNumbers(ctx, attrs_.sizes_input));
    std::vector<int64_t> out_dims;
    for (const AxisGeometry& axis : g) out_dims.push_back(axis.out);
    Tensor& y = ctx.Output(0, x.type(), Shape(out_dims));
    if (y.NumElements() == 0) return;
    if (x.NumElements() == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": cannot resize empty input ", x.shape().ToString(),
           " to ", y.shape().ToString());
    if (attrs_.mode == InterpolationMode::kNearest) RunNearest(ctx, g, x, y);
    else VisitNumericType(ctx.node(), x.type(), [&]<typename T>() { ResizeInterpolated<T>(ctx, attrs_, g, x, y); });
  }

 private:
  void RunNearest(KernelContext& ctx, const std::vector<AxisGeometry>& g, const Tensor& x, Tensor& y) const {
    const std::vector<std::vector<int64_t>> offsets = NearestOffsets(attrs_, g);
    // The extrapolation value in x's type, reinterpreted as storage.
    Tensor fill = Tensor::Allocate(x.type(), Shape{1});
    VisitNumericType(ctx.node(), x.type(), [&]<typename T>() {
      *static_cast<T*>(fill.raw_data()) = StoreAs<T>(attrs_.extrapolation_value);
    });
    VisitStorageType(x.type(), [&]<typename S>() {
      if constexpr (std::is_same_v<S, std::string>) {
        Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": string tensors are not supported");
      } else {
        ResizeNearest(offsets, y.shape().dims(), g.back().in, static_cast<const S*>(x.raw_data()),
                      static_cast<S*>(y.raw_data()), *static_cast<const S*>(fill.raw_data()), ctx.thread_pool());
      }
    });
  }

  ResizeAttributes attrs_;
};

}  // namespace

void RegisterResizeKernels(KernelRegistry& registry) {
  const std::vector<DataType> types = {DataType::kFloat,  DataType::kDouble, DataType::kFloat16, DataType::kBFloat16,
                                       DataType::kInt8,   DataType::kUInt8,  DataType::kInt16,   DataType::kUInt16,
                                       DataType::kInt32,  DataType::kUInt32, DataType::kInt64,   DataType::kUInt64};
  KernelDef resize;
  resize.op_type = "Resize";
  resize.since_version = 10;
  resize.input_types = {{0, types}};
  resize.host_inputs = {1, 2, 3};  // roi, scales, sizes (scales alone in opset 10)
  registry.Register<Resize>(std::move(resize));

  KernelDef upsample;
  upsample.op_type = "Upsample";
  upsample.since_version = 7;
  upsample.until_version = 9;
  upsample.input_types = {{0, types}};
  upsample.host_inputs = {1};  // scales (opset 9)
  registry.Register<Resize>(std::move(upsample));
}

}  // namespace tessera::cpu
