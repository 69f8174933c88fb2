// QuantizeLinear and DequantizeLinear (opsets 10-21: per-tensor, per-axis and, from opset 21, blocked
// scales) and DynamicQuantizeLinear (opset 11, uint8).
//
// Quantization divides by the scale (as the spec writes it, not a multiply by the reciprocal), rounds
// half to even, adds the zero point and saturates. Integer results are exact; float16/bfloat16 inputs
// and outputs are computed in float.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/common/target_clones.h"
#include "providers/cpu/quantization/quantize_common.h"

namespace tessera::cpu {
namespace {

template <typename T>
float ToFloatValue(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return ToFloat(v);
  else
    return static_cast<float>(v);
}

template <typename T>
T FromFloatValue(float v) {
  if constexpr (std::is_same_v<T, Float16>)
    return ToFloat16(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return ToBFloat16(v);
  else
    return v;
}

// Calls fn.template operator()<T>() for a float, float16, bfloat16 or int32 (when allowed) type.
template <typename Fn>
void VisitRealType(const Node& node, DataType type, bool allow_int32, const char* what, Fn&& fn) {
  switch (type) {
    case DataType::kFloat:
      return fn.template operator()<float>();
    case DataType::kFloat16:
      return fn.template operator()<Float16>();
    case DataType::kBFloat16:
      return fn.template operator()<BFloat16>();
    case DataType::kInt32:
      if (allow_int32) return fn.template operator()<int32_t>();
      break;
    default:
      break;
  }
  Fail(ErrorCode::kNotImplemented, node.Describe(), ": ", what, " of type ", DataTypeName(type), " is not supported");
}

// Calls fn.template operator()<Q>() for a quantized integer type (and int32 when kWithInt32).
template <bool kWithInt32, typename Fn>
void VisitQuantizedType(const Node& node, DataType type, const char* what, Fn&& fn) {
  switch (type) {
    case DataType::kInt8:
      return fn.template operator()<int8_t>();
    case DataType::kUInt8:
      return fn.template operator()<uint8_t>();
    case DataType::kInt16:
      return fn.template operator()<int16_t>();
    case DataType::kUInt16:
      return fn.template operator()<uint16_t>();
    case DataType::kInt32:
      if constexpr (kWithInt32) return fn.template operator()<int32_t>();
      break;
    default:
      break;
  }
  Fail(ErrorCode::kNotImplemented, node.Describe(), ": ", what, " of type ", DataTypeName(type), " is not supported");
}

// How scale and zero point map onto x viewed as rows [outer * axis_dim] of `inner` elements: one value
// for everything (per tensor), one per row index along the axis (per axis), or, for blocked layouts,
// one per (outer, axis block, inner) element.
struct ParamLayout {
  int64_t outer = 1, axis_dim = 1, inner = 1;
  int64_t block = 0;  // > 0: blocked quantization along the axis

  // Offset of row (o, d)'s first parameter; per-element parameters follow it for blocked layouts.
  int64_t RowParam(int64_t row) const {
    if (block == 0) return axis_dim == 1 ? 0 : row % axis_dim;
    const int64_t o = row / axis_dim, d = row % axis_dim, blocks = (axis_dim + block - 1) / block;
    return (o * blocks + d / block) * inner;
  }
};

ParamLayout ResolveLayout(const Node& node, const Shape& x, const Tensor& scale, const Tensor* zero_point,
                          int64_t axis_attr, int64_t block_size) {
  if (zero_point && zero_point->shape() != scale.shape() &&
      !(zero_point->NumElements() == 1 && scale.NumElements() == 1))
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": zero point ", zero_point->shape().ToString(), " and scale ",
         scale.shape().ToString(), " must have the same shape");
  ParamLayout layout;
  const Shape& s = scale.shape();
  if (block_size <= 0 && s.rank() <= 1 && s.NumElements() == 1) {
    layout.inner = x.NumElements();
    return layout;
  }
  const int64_t axis = NormalizeAxis(axis_attr, static_cast<int64_t>(x.rank()));
  layout.outer = x.SizeTo(static_cast<size_t>(axis));
  layout.axis_dim = x[static_cast<size_t>(axis)];
  layout.inner = x.SizeFrom(static_cast<size_t>(axis) + 1);
  if (block_size <= 0) {
    if (s.rank() != 1 || s[0] != layout.axis_dim)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": per-axis scale ", s.ToString(), " must be 1-D with ",
           layout.axis_dim, " values (x ", x.ToString(), ", axis ", axis, ")");
    return layout;
  }
  layout.block = block_size;
  Shape expected = x;
  expected[static_cast<size_t>(axis)] = (layout.axis_dim + block_size - 1) / block_size;
  if (s != expected)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": blocked scale ", s.ToString(), " must be ",
         expected.ToString(), " for x ", x.ToString(), ", axis ", axis, ", block_size ", block_size);
  return layout;
}

// Runs span_fn(row, first, count, param_offset, per_element) over pieces of at most 16384 elements of
// every row of `layout`, in parallel; param_offset is the row's first parameter (see RowParam).
template <typename SpanFn>
void ForEachSpan(const ThreadPool& pool, const ParamLayout& layout, SpanFn&& span_fn) {
  constexpr int64_t kSpan = 16384;
  const int64_t rows = layout.outer * layout.axis_dim, pieces = (layout.inner + kSpan - 1) / kSpan;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, std::min(kSpan, layout.inner)));
  pool.ParallelFor(rows * pieces, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t row = task / pieces, first = (task % pieces) * kSpan;
      span_fn(row, first, std::min(kSpan, layout.inner - first), layout.RowParam(row), layout.block > 0);
    }
  });
}

template <typename X, typename Q>
void QuantizeRows(const ThreadPool& pool, const ParamLayout& layout, const X* x, const std::vector<float>& scales,
                  const std::vector<float>& zero_points, Q* y) {
  ForEachSpan(pool, layout, [&](int64_t row, int64_t first, int64_t count, int64_t p, bool per_element) {
    const X* in = x + row * layout.inner + first;
    Q* out = y + row * layout.inner + first;
    if (per_element) {
      const float* s = scales.data() + p + first;
      const float* z = zero_points.data() + p + first;
      for (int64_t i = 0; i < count; ++i) out[i] = QuantizeValue<Q>(ToFloatValue(in[i]) / s[i], z[i]);
      return;
    }
    const float s = scales[static_cast<size_t>(p)], z = zero_points[static_cast<size_t>(p)];
    if constexpr (std::is_same_v<X, float>) {
      QuantizeSpan(in, count, s, z, out);
    } else {
      for (int64_t i = 0; i < count; ++i) out[i] = QuantizeValue<Q>(ToFloatValue(in[i]) / s, z);
    }
  });
}

// (x - zero_point) as float; 8/16-bit values subtract in int32, int32 values in int64.
template <typename Q>
float Centered(Q x, int32_t zero_point) {
  if constexpr (std::is_same_v<Q, int32_t>)
    return static_cast<float>(static_cast<int64_t>(x) - zero_point);
  else
    return static_cast<float>(static_cast<int32_t>(x) - zero_point);
}

template <typename Q, typename Y>
void DequantizeRows(const ThreadPool& pool, const ParamLayout& layout, const Q* x, const std::vector<float>& scales,
                    const std::vector<int32_t>& zero_points, Y* y) {
  ForEachSpan(pool, layout, [&](int64_t row, int64_t first, int64_t count, int64_t p, bool per_element) {
    const Q* in = x + row * layout.inner + first;
    Y* out = y + row * layout.inner + first;
    if (per_element) {
      const float* s = scales.data() + p + first;
      const int32_t* z = zero_points.data() + p + first;
      for (int64_t i = 0; i < count; ++i) out[i] = FromFloatValue<Y>(Centered(in[i], z[i]) * s[i]);
    } else {
      const float s = scales[static_cast<size_t>(p)];
      const int32_t z = zero_points[static_cast<size_t>(p)];
      for (int64_t i = 0; i < count; ++i) out[i] = FromFloatValue<Y>(Centered(in[i], z) * s);
    }
  });
}

// Zero points for `count` parameters: the given ones, or zeros when the input is omitted.
std::vector<int32_t> ZeroPointsFor(const Node& node, const Tensor* zero_point, size_t count) {
  if (!zero_point) return std::vector<int32_t>(count, 0);
  return ReadZeroPoints(node, zero_point, "zero point");
}

class QuantizeLinear : public Kernel {
 public:
  explicit QuantizeLinear(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", 1)),
        block_size_(info.node().GetInt("block_size", 0)),
        output_dtype_(static_cast<DataType>(info.node().GetInt("output_dtype", 0))) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& scale = ctx.Input(1);
    const Tensor* zero_point = ctx.OptionalInput(2);
    const DataType out_type = OutputType(node, zero_point);
    const ParamLayout layout = ResolveLayout(node, x.shape(), scale, zero_point, axis_, block_size_);
    const std::vector<float> scales = ReadScales(node, scale, "y_scale");
    const std::vector<int32_t> zp_ints = ZeroPointsFor(node, zero_point, scales.size());
    const std::vector<float> zero_points(zp_ints.begin(), zp_ints.end());
    Tensor& y = ctx.Output(0, out_type, x.shape());
    if (x.NumElements() == 0) return;
    VisitRealType(node, x.type(), true, "x", [&]<typename X>() {
      VisitQuantizedType<false>(node, out_type, "y", [&]<typename Q>() {
        QuantizeRows(ctx.thread_pool(), layout, x.Data<X>(), scales, zero_points, y.Data<Q>());
      });
    });
  }

 private:
  DataType OutputType(const Node& node, const Tensor* zero_point) const {
    if (!zero_point) return output_dtype_ == DataType::kUndefined ? DataType::kUInt8 : output_dtype_;
    if (output_dtype_ != DataType::kUndefined && output_dtype_ != zero_point->type())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": output_dtype ", DataTypeName(output_dtype_),
           " differs from y_zero_point's type ", DataTypeName(zero_point->type()));
    return zero_point->type();
  }

  int64_t axis_, block_size_;
  DataType output_dtype_;
};

class DequantizeLinear : public Kernel {
 public:
  explicit DequantizeLinear(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", 1)), block_size_(info.node().GetInt("block_size", 0)) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& scale = ctx.Input(1);
    const Tensor* zero_point = ctx.OptionalInput(2);
    if (zero_point && zero_point->type() != x.type())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": x_zero_point is ", DataTypeName(zero_point->type()),
           " but x is ", DataTypeName(x.type()));
    const ParamLayout layout = ResolveLayout(node, x.shape(), scale, zero_point, axis_, block_size_);
    const std::vector<float> scales = ReadScales(node, scale, "x_scale");
    const std::vector<int32_t> zero_points = ZeroPointsFor(node, zero_point, scales.size());
    Tensor& y = ctx.Output(0, scale.type(), x.shape());
    if (x.NumElements() == 0) return;
    VisitQuantizedType<true>(node, x.type(), "x", [&]<typename Q>() {
      VisitRealType(node, scale.type(), false, "x_scale", [&]<typename Y>() {
        DequantizeRows(ctx.thread_pool(), layout, x.Data<Q>(), scales, zero_points, y.Data<Y>());
      });
    });
  }

 private:
  int64_t axis_, block_size_;
};

// min(0, min x) and max(0, max x) of a span (NaN ignored), in vectors of 16 lanes (one AVX-512 register, two AVX2
// ones) whose lanewise select compiles to vminps / vmaxps; a loop over an array of 16 scalar lanes stayed scalar.
typedef float RangeLanes __attribute__((vector_size(16 * sizeof(float))));

TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")
void SpanRangeWithZero(const float* x, int64_t n, float* lo_out, float* hi_out) {
  constexpr int64_t kLanes = 16;
  RangeLanes lo = {}, hi = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    RangeLanes v;
    std::memcpy(&v, x + i, sizeof(v));
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  float l = 0.0f, h = 0.0f;
  for (int64_t j = 0; j < kLanes; ++j) {
    l = lo[j] < l ? lo[j] : l;
    h = hi[j] > h ? hi[j] : h;
  }
  for (; i < n; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo_out = l;
  *hi_out = h;
}

std::pair<float, float> RangeWithZero(const ThreadPool& pool, const float* x, int64_t n) {
  constexpr int64_t kChunk = 16384;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<float> mins(static_cast<size_t>(chunks), 0.0f), maxs(static_cast<size_t>(chunks), 0.0f);
  pool.ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * kChunk;
      SpanRangeWithZero(x + first, std::min(n, first + kChunk) - first, &mins[static_cast<size_t>(c)],
                        &maxs[static_cast<size_t>(c)]);
    }
  });
  return {*std::min_element(mins.begin(), mins.end()), *std::max_element(maxs.begin(), maxs.end())};
}

// DynamicQuantizeLinear: DynamicQuantizeUint8 (quantize_common.h) over the whole tensor.
class DynamicQuantizeLinear : public Kernel {
 public:
  explicit DynamicQuantizeLinear(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, DataType::kUInt8, x.shape());
    const DynamicQuantization q =
        DynamicQuantizeUint8(ctx.thread_pool(), x.Data<float>(), x.NumElements(), y.Data<uint8_t>());
    ctx.Output(1, DataType::kFloat, Shape{}).Data<float>()[0] = q.scale;
    ctx.Output(2, DataType::kUInt8, Shape{}).Data<uint8_t>()[0] = q.zero_point;
  }
};

KernelDef Def(const char* op, int since, int until, std::map<int, std::vector<DataType>> types) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.until_version = until;
  def.input_types = std::move(types);
  return def;
}

}  // namespace

DynamicQuantization DynamicQuantizeUint8(const ThreadPool& pool, const float* x, int64_t n, uint8_t* q) {
  const auto [lo, hi] = n > 0 ? RangeWithZero(pool, x, n) : std::pair{0.0f, 0.0f};
  DynamicQuantization result;
  result.scale = (hi - lo) / 255.0f;
  result.zero_point = result.scale == 0.0f ? 0 : QuantizeValue<uint8_t>(-lo / result.scale, 0.0f);
  if (n == 0) return result;
  if (result.scale == 0.0f) {
    std::fill(q, q + n, uint8_t{0});
    return result;
  }
  ParamLayout layout;
  layout.inner = n;
  QuantizeRows(pool, layout, x, {result.scale}, {static_cast<float>(result.zero_point)}, q);
  return result;
}

void RegisterQuantizeKernels(KernelRegistry& registry) {
  using D = DataType;
  const std::vector<D> q8{D::kInt8, D::kUInt8}, q16{D::kInt8, D::kUInt8, D::kInt16, D::kUInt16};
  const std::vector<D> reals{D::kFloat, D::kFloat16, D::kBFloat16};
  registry.Register<QuantizeLinear>(
      Def("QuantizeLinear", 10, 18, {{0, {D::kFloat, D::kInt32}}, {1, {D::kFloat}}, {2, q8}}));
  registry.Register<QuantizeLinear>(
      Def("QuantizeLinear", 19, 20, {{0, {D::kFloat, D::kFloat16, D::kBFloat16, D::kInt32}}, {1, reals}, {2, q8}}));
  registry.Register<QuantizeLinear>(Def(
      "QuantizeLinear", 21, INT_MAX, {{0, {D::kFloat, D::kFloat16, D::kBFloat16, D::kInt32}}, {1, reals}, {2, q16}}));

  std::vector<D> dq8 = q8, dq16 = q16;
  dq8.push_back(D::kInt32);
  dq16.push_back(D::kInt32);
  registry.Register<DequantizeLinear>(Def("DequantizeLinear", 10, 18, {{0, dq8}, {1, {D::kFloat}}, {2, dq8}}));
  registry.Register<DequantizeLinear>(Def("DequantizeLinear", 19, 20, {{0, dq8}, {1, reals}, {2, dq8}}));
  registry.Register<DequantizeLinear>(Def("DequantizeLinear", 21, INT_MAX, {{0, dq16}, {1, reals}, {2, dq16}}));

  registry.Register<DynamicQuantizeLinear>(Def("DynamicQuantizeLinear", 11, INT_MAX, {{0, {D::kFloat}}}));
}

}  // namespace tessera::cpu
