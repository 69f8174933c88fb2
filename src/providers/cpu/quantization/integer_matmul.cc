// MatMulInteger and QLinearMatMul (opset 10): numpy-style batched matrix products of 8-bit tensors with
// int32 accumulation. Zero points (and, for QLinearMatMul, scales) are per tensor, per row of A / per
// column of B ([M] / [N]), or per batch and row / column ([..., M, 1] / [..., 1, N]). QLinearMatMul
// requantizes each sum as saturate(round_half_even(sum * a_scale * b_scale / y_scale) + y_zero_point).
// A 2-D B (int8, or a constant uint8 B) with per-tensor or per-column zero points and a per-tensor A
// zero point runs on oneDNN's int8 matmul where the CPU makes its products exact (VNNI); everything
// else on an exact int16 GEMM of the zero-point-corrected operands.
#include <algorithm>
#include <mutex>
#include <tuple>

#include "providers/cpu/common/dnnl_utils.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/quantization/integer_gemm.h"
#include "providers/cpu/quantization/quantize_common.h"

namespace tessera::cpu {
namespace {

// Operand shapes resolved the numpy.matmul way: 1-D operands are promoted to a matrix and the batch
// dimensions broadcast. Output batch b reads batch a_batch[b] of A and b_batch[b] of B.
struct MatMulGeometry {
  int64_t m = 1, k = 1, n = 1;
  int64_t a_batches = 1, b_batches = 1;
  std::vector<int64_t> a_batch, b_batch;
  Shape output;
};

// Flattened index into `dims` (a broadcast operand's batch shape, right-aligned) of output batch `index`.
int64_t BroadcastIndex(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& dims, int64_t index) {
  int64_t result = 0, stride = 1;
  for (size_t i = 0; i < out_dims.size(); ++i) {
    const size_t axis = out_dims.size() - 1 - i;
    const int64_t coord = index % out_dims[axis];
    index /= out_dims[axis];
    if (i >= dims.size()) continue;
    const int64_t dim = dims[dims.size() - 1 - i];
    result += (dim == 1 ? 0 : coord) * stride;
    stride *= dim;
  }
  return result;
}

MatMulGeometry ResolveMatMul(const Node& node, const Shape& a, const Shape& b) {
  if (a.rank() == 0 || b.rank() == 0)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": operands must have rank >= 1, got A ", a.ToString(),
         " and B ", b.ToString());
  MatMulGeometry g;
  std::vector<int64_t> a_dims = a.dims(), b_dims = b.dims();
  if (a.rank() == 1) a_dims.insert(a_dims.begin(), 1);
  if (b.rank() == 1) b_dims.push_back(1);
  g.m = a_dims[a_dims.size() - 2];
  g.k = a_dims.back();
  g.n = b_dims.back();
  if (b_dims[b_dims.size() - 2] != g.k)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": inner dimensions differ: A ", a.ToString(), ", B ",
         b.ToString());
  const std::vector<int64_t> a_batch_dims(a_dims.begin(), a_dims.end() - 2),
      b_batch_dims(b_dims.begin(), b_dims.end() - 2);
  std::vector<int64_t> out_batch(std::max(a_batch_dims.size(), b_batch_dims.size()), 1);
  for (size_t i = 0; i < out_batch.size(); ++i) {
    const int64_t da = i < a_batch_dims.size() ? a_batch_dims[a_batch_dims.size() - 1 - i] : 1;
    const int64_t db = i < b_batch_dims.size() ? b_batch_dims[b_batch_dims.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": batch dimensions do not broadcast: A ", a.ToString(),
           ", B ", b.ToString());
    out_batch[out_batch.size() - 1 - i] = da == 1 ? db : da;
  }
  g.a_batches = Shape(a_batch_dims).NumElements();
  g.b_batches = Shape(b_batch_dims).NumElements();
  const int64_t batches = Shape(out_batch).NumElements();
  for (int64_t i = 0; i < batches; ++i) {
    g.a_batch.push_back(BroadcastIndex(out_batch, a_batch_dims, i));
    g.b_batch.push_back(BroadcastIndex(out_batch, b_batch_dims, i));
  }
  std::vector<int64_t> out = out_batch;
  if (a.rank() > 1) out.push_back(g.m);
  if (b.rank() > 1) out.push_back(g.n);
  g.output = Shape(std::move(out));
  return g;
}

// A per-tensor, per-row (A) or per-column (B) parameter: value(batch, i) = values[batch * batch_stride + i * stride].
template <typename V>
struct LineParameter {
  std::vector<V> values;
  int64_t batch_stride = 0, stride = 0;
  V at(int64_t batch, int64_t i) const { return values[static_cast<size_t>(batch * batch_stride + i * stride)]; }
};

// Accepts a scalar, a 1-D tensor of `lines` values, or the operand's batch shape with `lines` along
// `line_axis_from_end` (2: rows of A as [..., M, 1]; 1: columns of B as [..., 1, N]).
template <typename V>
LineParameter<V> MakeLineParameter(const Node& node, std::vector<V> values, const Shape& shape, const Shape& operand,
                                   int64_t lines, int line_axis_from_end, const char* what) {
  LineParameter<V> p{std::move(values), 0, 0};
  const int64_t count = shape.NumElements();
  if (count == 1 && shape.rank() <= 1) return p;
  if (shape.rank() == 1 && count == lines) {
    p.stride = 1;
    return p;
  }
  if (shape.rank() == operand.rank() && operand.rank() >= 2) {
    Shape expected = operand;
    expected[operand.rank() - (line_axis_from_end == 2 ? 1 : 2)] = 1;
    if (shape == expected) {
      p.stride = 1;
      p.batch_stride = lines;
      return p;
    }
  }
  Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " ", shape.ToString(),
       " must be a scalar, a 1-D tensor of ", lines, " values or per batch and ",
       line_axis_from_end == 2 ? "row" : "column", " for operand ", operand.ToString());
}

// B minus its zero points as int16, one [K x N] matrix per batch of B.
template <typename TB>
std::vector<int16_t> PackB(const ThreadPool& pool, const MatMulGeometry& g, const TB* b,
                           const LineParameter<int32_t>& b_zero) {
  std::vector<int16_t> packed(static_cast<size_t>(g.b_batches * g.k * g.n));
  pool.ParallelFor(g.b_batches * g.k, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.n)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t row = begin; row < end; ++row) {
                       const int64_t batch = row / g.k;
                       const TB* in = b + row * g.n;
                       int16_t* out = packed.data() + row * g.n;
                       for (int64_t j = 0; j < g.n; ++j) out[j] = static_cast<int16_t>(in[j] - b_zero.at(batch, j));
                     }
                   });
  return packed;
}

// Computes every output row block: sink(out_batch, first_row, rows, const int32_t* sums [rows x N]) or,
// when `direct` is set, writes the sums straight into direct[(batch * M + row) * N].
// `prepacked` is B already packed by PackB (a constant B, packed once), or null to pack it here.
template <typename TA, typename TB, typename Sink>
void IntegerMatMul(const ThreadPool& pool, const MatMulGeometry& g, const TA* a, const TB* b,
                   const LineParameter<int32_t>& a_zero, const LineParameter<int32_t>& b_zero, int32_t* direct,
                   Sink&& sink, const std::vector<int16_t>* prepacked = nullptr) {
  std::vector<int16_t> packed_here;
  if (!prepacked) packed_here = PackB(pool, g, b, b_zero);
  const std::vector<int16_t>& packed_b = prepacked ? *prepacked : packed_here;
  constexpr int64_t kRowBlock = 16;
  const int64_t blocks_per_batch = (g.m + kRowBlock - 1) / kRowBlock;
  const int64_t tasks = static_cast<int64_t>(g.a_batch.size()) * blocks_per_batch;
  const int64_t work_per_task = kRowBlock * std::max<int64_t>(1, g.k * g.n);
  pool.ParallelFor(tasks, std::max<int64_t>(1, 262144 / work_per_task), [&](int64_t begin, int64_t end) {
    std::vector<int16_t> a_rows(static_cast<size_t>(kRowBlock * g.k));
    std::vector<int32_t> sums(direct ? 0 : static_cast<size_t>(kRowBlock * g.n));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t batch = task / blocks_per_batch, first = (task % blocks_per_batch) * kRowBlock;
      const int64_t rows = std::min(kRowBlock, g.m - first), a_batch = g.a_batch[static_cast<size_t>(batch)];
      for (int64_t r = 0; r < rows; ++r) {
        const TA* in = a + (a_batch * g.m + first + r) * g.k;
        const int32_t zero = a_zero.at(a_batch, first + r);
        for (int64_t kk = 0; kk < g.k; ++kk)
          a_rows[static_cast<size_t>(r * g.k + kk)] = static_cast<int16_t>(in[kk] - zero);
      }
      const int16_t* b_matrix = packed_b.data() + g.b_batch[static_cast<size_t>(batch)] * g.k * g.n;
      int32_t* out = direct ? direct + (batch * g.m + first) * g.n : sums.data();
      GemmInt16(a_rows.data(), b_matrix, out, rows, g.n, g.k, g.n, g.n);
      if (!direct) sink(batch, first, rows, sums.data());
    }
  });
}

// oneDNN's int8 matmul for A [rows x K] (u8/s8, one runtime zero point) times a 2-D B [K x N] held as s8
// into s32 sums. A uint8 B is stored shifted, B - 128, so that it fits s8: the kernel then adds
// (weight_shift - b_zero[j]) * (sum_k A[i, k] - K * a_zero) to every sum, which restores
// sum_k (A - a_zero)(B - b_zero) exactly (the same correction serves an int8 B with zero points).
// `primitive` is empty when oneDNN rejects the problem.
struct DnnlIntMatMul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory::desc src_plain, weights_plain, dst_plain;
  dnnl::memory packed_weights;  // set when B is a constant
  int32_t weight_shift = 0;     // 128 for a uint8 B, else 0
};

DnnlIntMatMul BuildDnnlIntMatMul(int64_t rows, int64_t k, int64_t n, DataType a_type, DataType b_type,
                                 const Tensor& constant_b) {
  using dnnl::memory;
  const memory::data_type src_type = a_type == DataType::kUInt8 ? memory::data_type::u8 : memory::data_type::s8;
  DnnlIntMatMul mm;
  mm.src_plain = memory::desc({rows, k}, src_type, memory::format_tag::ab);
  mm.weights_plain = memory::desc({k, n}, memory::data_type::s8, memory::format_tag::ab);
  mm.dst_plain = memory::desc({rows, n}, memory::data_type::s32, memory::format_tag::ab);
  dnnl::primitive_attr attr = DnnlAttr();
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  try {
    const memory::desc weights_any({k, n}, memory::data_type::s8, memory::format_tag::any);
    mm.pd =
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(mm.src_plain, weights_any, mm.dst_plain), attr, DnnlEngine());
  } catch (const dnnl::error&) {
    return mm;
  }
  mm.primitive = dnnl::matmul(mm.pd);
  if (constant_b.defined()) {
    std::vector<int8_t> shifted;
    const void* weights = constant_b.raw_data();
    if (b_type == DataType::kUInt8) {
      mm.weight_shift = 128;
      const uint8_t* b = constant_b.Data<uint8_t>();
      shifted.resize(static_cast<size_t>(k * n));
      for (size_t i = 0; i < shifted.size(); ++i) shifted[i] = static_cast<int8_t>(static_cast<int32_t>(b[i]) - 128);
      weights = shifted.data();
    }
    dnnl::memory plain(mm.weights_plain, DnnlEngine(), const_cast<void*>(weights));
    mm.packed_weights = ReorderInto(plain, mm.pd.weights_desc());
  }
  return mm;
}

// `b` is read only when the weights were not packed at creation (a runtime int8 B).
void RunDnnlIntMatMul(KernelContext& ctx, const DnnlIntMatMul& mm, const void* a, int32_t a_zero, const void* b,
                      int32_t* sums) {
  const dnnl::engine& engine = DnnlEngine();
  dnnl::memory weights = mm.packed_weights;
  if (!weights) {
    weights = dnnl::memory(mm.weights_plain, engine, const_cast<void*>(b));
    if (mm.pd.weights_desc() != mm.weights_plain) weights = ReorderInto(weights, mm.pd.weights_desc());
  }
  dnnl::memory zero({{1}, dnnl::memory::data_type::s32, dnnl::memory::format_tag::x}, engine, &a_zero);
  ExecuteDnnl(ctx, mm.primitive, mm.pd,
              {{DNNL_ARG_SRC, dnnl::memory(mm.src_plain, engine, const_cast<void*>(a))},
               {DNNL_ARG_WEIGHTS, weights},
               {DNNL_ARG_DST, dnnl::memory(mm.dst_plain, engine, sums)},
               {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zero}});
}

// sums[r, j] += coefficient[j] * (sum_k A[r, k] - K * a_zero) for rows [0, rows): the rank-1 term that turns
// oneDNN's sums over the shifted weights into (A - a_zero)(B - b_zero) (see DnnlIntMatMul). Wraps modulo 2^32.
template <typename TA>
void AddRankOneCorrection(const TA* a, int64_t rows, int64_t k, int32_t a_zero, const std::vector<int32_t>& coefficient,
                          int32_t* sums) {
  const auto n = static_cast<int64_t>(coefficient.size());
  for (int64_t r = 0; r < rows; ++r) {
    const TA* row = a + r * k;
    int32_t row_sum = -static_cast<int32_t>(k) * a_zero;
    for (int64_t kk = 0; kk < k; ++kk) row_sum += row[kk];
    auto* out = reinterpret_cast<uint32_t*>(sums + r * n);
    for (int64_t j = 0; j < n; ++j)
      out[j] += static_cast<uint32_t>(coefficient[static_cast<size_t>(j)]) * static_cast<uint32_t>(row_sum);
  }
}

// Calls fn.template operator()<T>() for int8 or uint8.
template <typename Fn>
void Visit8Bit(const Node& node, DataType type, const char* what, Fn&& fn) {
  if (type == DataType::kUInt8) return fn.template operator()<uint8_t>();
  if (type == DataType::kInt8) return fn.template operator()<int8_t>();
  Fail(ErrorCode::kNotImplemented, node.Describe(), ": ", what, " of type ", DataTypeName(type), " is not supported");
}

void CheckZeroPointType(const Node& node, const Tensor* zero_point, const Tensor& operand, const char* what) {
  if (zero_point && zero_point->type() != operand.type())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " is ", DataTypeName(zero_point->type()),
         " but its operand is ", DataTypeName(operand.type()));
}

LineParameter<int32_t> ZeroPointParameter(const Node& node, const Tensor* zero_point, const Shape& operand,
                                          int64_t lines, int line_axis_from_end, const char* what) {
  if (!zero_point) return {{0}, 0, 0};
  return MakeLineParameter(node, ReadZeroPoints(node, zero_point, what), zero_point->shape(), operand, lines,
                           line_axis_from_end, what);
}

// What MatMulInteger and QLinearMatMul share: the constant B and the choice between oneDNN (2-D int8
// B without zero points, as symmetric weight quantization produces, and a per-tensor A zero point)
// and the exact int16 path for everything else.
class IntegerMatMulBase : public Kernel {
 protected:
  IntegerMatMulBase(const KernelInfo& info, size_t b_input)
      : constant_b_(info.ConstantInput(b_input) ? *info.ConstantInput(b_input) : Tensor()) {}

  // The operands of a MatMulInteger-style node: A, B and their optional zero points at the given inputs, checked,
  // with the product's geometry.
  struct Operands {
    const Tensor& a;
    const Tensor& b;
    MatMulGeometry g;
    LineParameter<int32_t> a_zero, b_zero;
  };
  static Operands ResolveOperands(KernelContext& ctx, size_t a_index, size_t b_index, size_t a_zero_index,
                                  size_t b_zero_index) {
    const Node& node = ctx.node();
    const Tensor& a = ctx.Input(a_index);
    const Tensor& b = ctx.Input(b_index);
    const Tensor* a_zp = ctx.OptionalInput(a_zero_index);
    const Tensor* b_zp = ctx.OptionalInput(b_zero_index);
    CheckZeroPointType(node, a_zp, a, "a_zero_point");
    CheckZeroPointType(node, b_zp, b, "b_zero_point");
    MatMulGeometry g = ResolveMatMul(node, a.shape(), b.shape());
    auto a_zero = ZeroPointParameter(node, a_zp, a.shape(), g.m, 2, "a_zero_point");
    auto b_zero = ZeroPointParameter(node, b_zp, b.shape(), g.n, 1, "b_zero_point");
    return Operands{a, b, std::move(g), std::move(a_zero), std::move(b_zero)};
  }

  // Sums of every output row block: written to `direct` ([batches x M x N]) when set, else passed to
  // sink(out_batch, first_row, rows, sums [rows x N]).
  template <typename Sink>
  void Sums(KernelContext& ctx, const MatMulGeometry& g, const Tensor& a, const Tensor& b,
            const LineParameter<int32_t>& a_zero, const LineParameter<int32_t>& b_zero, int32_t* direct,
            Sink&& sink) const {
    // oneDNN holds B as s8: an int8 B as it is, a uint8 B shifted at creation (so it must be constant).
    const bool b_fits = b.type() == DataType::kInt8 || (b.type() == DataType::kUInt8 && constant_b_.defined());
    if (b_fits && b.shape().rank() == 2 && a.shape().rank() >= 2 && g.k > 0 && a_zero.stride == 0 &&
        a_zero.batch_stride == 0 && DnnlInt8IsExact()) {
      const int64_t rows = static_cast<int64_t>(g.a_batch.size()) * g.m;
      const std::vector<int64_t> key{static_cast<int64_t>(a.type()), static_cast<int64_t>(b.type()), rows, g.k, g.n};
      std::shared_ptr<const DnnlIntMatMul> mm = primitives_.Get(
          ctx, key, [&] { return BuildDnnlIntMatMul(rows, g.k, g.n, a.type(), b.type(), constant_b_); });
      if (mm->primitive) {
        Visit8Bit(ctx.node(), a.type(), "A", [&]<typename TA>() {
          DnnlSums<TA>(ctx, *mm, g, a, a_zero.values[0], b, b_zero, direct, sink);
        });
        return;
      }
    }
    Visit8Bit(ctx.node(), a.type(), "A", [&]<typename TA>() {
      Visit8Bit(ctx.node(), b.type(), "B", [&]<typename TB>() {
        std::shared_ptr<const std::vector<int16_t>> packed;
        if (constant_b_.defined()) packed = PackedConstantB<TB>(ctx, g, b_zero);
        IntegerMatMul(ctx.thread_pool(), g, a.Data<TA>(), b.Data<TB>(), a_zero, b_zero, direct, sink, packed.get());
      });
    });
  }

  // The constant B minus its zero points as int16 (PackB), made on first use and kept while the zero points stay
  // the same (they are constants in every quantized model seen; a change repacks).
  template <typename TB>
  std::shared_ptr<const std::vector<int16_t>> PackedConstantB(KernelContext& ctx, const MatMulGeometry& g,
                                                             const LineParameter<int32_t>& b_zero) const {
    std::lock_guard lock(packed_mutex_);
    if (!packed_b_ || packed_zero_ != b_zero.values || packed_zero_stride_ != b_zero.stride ||
        packed_zero_batch_stride_ != b_zero.batch_stride) {
      packed_b_ = std::make_shared<const std::vector<int16_t>>(
          PackB(ctx.thread_pool(), g, constant_b_.Data<TB>(), b_zero));
      packed_zero_ = b_zero.values;
      packed_zero_stride_ = b_zero.stride;
      packed_zero_batch_stride_ = b_zero.batch_stride;
    }
    return packed_b_;
  }

 private:
  template <typename TA, typename Sink>
  static void DnnlSums(KernelContext& ctx, const DnnlIntMatMul& mm, const MatMulGeometry& g, const Tensor& a_tensor,
                       int32_t a_zero, const Tensor& b, const LineParameter<int32_t>& b_zero, int32_t* direct,
                       Sink&& sink) {
    const auto batches = static_cast<int64_t>(g.a_batch.size());
    Tensor storage;
    if (!direct) storage = Tensor::Allocate(DataType::kInt32, Shape{batches, g.m, g.n}, ctx.allocator());
    int32_t* sums = direct ? direct : storage.Data<int32_t>();
    RunDnnlIntMatMul(ctx, mm, a_tensor.raw_data(), a_zero, b.raw_data(), sums);
    const TA* a = a_tensor.Data<TA>();
    // Column coefficients of the rank-1 correction (see DnnlIntMatMul); all zero for a symmetric int8 B.
    std::vector<int32_t> column_coefficient(static_cast<size_t>(g.n));
    bool corrected = false;
    for (int64_t j = 0; j < g.n; ++j) {
      column_coefficient[static_cast<size_t>(j)] = mm.weight_shift - b_zero.at(0, j);
      corrected |= column_coefficient[static_cast<size_t>(j)] != 0;
    }
    if (direct && !corrected) return;
    constexpr int64_t kRowBlock = 16;
    const int64_t blocks = (g.m + kRowBlock - 1) / kRowBlock;
    ctx.thread_pool().ParallelFor(
        batches * blocks, std::max<int64_t>(1, 16384 / (kRowBlock * std::max<int64_t>(1, g.n))),
        [&](int64_t begin, int64_t end) {
          for (int64_t task = begin; task < end; ++task) {
            const int64_t batch = task / blocks, first = (task % blocks) * kRowBlock;
            const int64_t rows = std::min(kRowBlock, g.m - first);
            int32_t* block = sums + (batch * g.m + first) * g.n;
            if (corrected)
              AddRankOneCorrection(a + (batch * g.m + first) * g.k, rows, g.k, a_zero, column_coefficient, block);
            if (!direct) sink(batch, first, rows, block);
          }
        });
  }

  Tensor constant_b_;  // shares the initializer's buffer; undefined when B is not constant
  ShapeCache<DnnlIntMatMul> primitives_;
  mutable std::mutex packed_mutex_;
  mutable std::shared_ptr<const std::vector<int16_t>> packed_b_;  // PackedConstantB's
  mutable std::vector<int32_t> packed_zero_;
  mutable int64_t packed_zero_stride_ = 0, packed_zero_batch_stride_ = 0;
};

class MatMulInteger : public IntegerMatMulBase {
 public:
  explicit MatMulInteger(const KernelInfo& info) : IntegerMatMulBase(info, 1) {}

  void Compute(KernelContext& ctx) const override {
    const Operands o = ResolveOperands(ctx, 0, 1, 2, 3);
    Tensor& y = ctx.Output(0, DataType::kInt32, o.g.output);
    if (y.NumElements() == 0) return;
    Sums(ctx, o.g, o.a, o.b, o.a_zero, o.b_zero, y.Data<int32_t>(), [](int64_t, int64_t, int64_t, const int32_t*) {});
  }
};

class QLinearMatMul : public IntegerMatMulBase {
 public:
  explicit QLinearMatMul(const KernelInfo& info) : IntegerMatMulBase(info, 3) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Operands o = ResolveOperands(ctx, 0, 3, 2, 5);
    const Tensor& a = o.a;
    const Tensor& b = o.b;
    const MatMulGeometry& g = o.g;
    const Tensor& y_zp = ctx.Input(7);
    const auto a_scale = MakeLineParameter(node, ReadScales(node, ctx.Input(1), "a_scale"), ctx.Input(1).shape(),
                                           a.shape(), g.m, 2, "a_scale");
    const auto b_scale = MakeLineParameter(node, ReadScales(node, ctx.Input(4), "b_scale"), ctx.Input(4).shape(),
                                           b.shape(), g.n, 1, "b_scale");
    CheckChannelParameter(node, ctx.Input(6).shape(), 1, "y_scale", "tensor");
    CheckChannelParameter(node, y_zp.shape(), 1, "y_zero_point", "tensor");
    const float y_scale = ReadScales(node, ctx.Input(6), "y_scale")[0];
    const float y_zero = static_cast<float>(ReadZeroPoints(node, &y_zp, "y_zero_point")[0]);
    Tensor& y = ctx.Output(0, y_zp.type(), g.output);
    if (y.NumElements() == 0) return;
    Visit8Bit(node, y_zp.type(), "y", [&]<typename TY>() {
      TY* out = y.Data<TY>();
      // sum * a_scale * b_scale / y_scale, rounded half to even, plus y_zero_point.
      auto requantize = [&](int64_t batch, int64_t first, int64_t rows, const int32_t* sums) {
        const int64_t a_batch = g.a_batch[static_cast<size_t>(batch)], b_batch = g.b_batch[static_cast<size_t>(batch)];
        for (int64_t r = 0; r < rows; ++r) {
          const float a_s = a_scale.at(a_batch, first + r);
          const int32_t* sum = sums + r * g.n;
          TY* row = out + (batch * g.m + first + r) * g.n;
          if (b_scale.stride == 0) {
            RequantizeSpan(sum, g.n, 0, a_s * b_scale.at(b_batch, 0) / y_scale, y_zero, row);
            continue;
          }
          for (int64_t j = 0; j < g.n; ++j) {
            const float multiplier = a_s * b_scale.at(b_batch, j) / y_scale;
            row[j] = QuantizeValue<TY>(static_cast<float>(sum[j]) * multiplier, y_zero);
          }
        }
      };
      Sums(ctx, g, a, b, o.a_zero, o.b_zero, nullptr, requantize);
    });
  }
};

// com.microsoft MatMulIntegerToFloat (onnxruntime's contrib op, also what integer_matmul_fusion writes):
// Y = float(sum_k (A - a_zero)(B - b_zero)) * (a_scale * b_scale[j]) [+ bias[j]], float output. a_scale is a
// scalar; b_scale and b_zero_point are scalars or per output column ([N]); bias is [N].
class MatMulIntegerToFloat : public IntegerMatMulBase {
 public:
  explicit MatMulIntegerToFloat(const KernelInfo& info) : IntegerMatMulBase(info, 1) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Operands o = ResolveOperands(ctx, 0, 1, 4, 5);
    const MatMulGeometry& g = o.g;
    const Tensor* bias = ctx.OptionalInput(6);
    if (ctx.Input(2).NumElements() != 1)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": a_scale ", ctx.Input(2).shape().ToString(),
           " must hold one value");
    const float a_scale = ReadScales(node, ctx.Input(2), "a_scale")[0];
    const std::vector<float> b_scale = ReadScales(node, ctx.Input(3), "b_scale");
    if (b_scale.size() != 1 && !(ctx.Input(3).shape().rank() == 1 && static_cast<int64_t>(b_scale.size()) == g.n))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": b_scale ", ctx.Input(3).shape().ToString(),
           " must be a scalar or hold one value per output column (", g.n, ")");
    if (bias && (bias->type() != DataType::kFloat || bias->shape().rank() != 1 || bias->shape()[0] != g.n))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": bias is ", *bias, ", expected float [", g.n, "]");
    // The multiplier per column, rounded as the unfused Mul(a_scale, b_scale) rounds it.
    std::vector<float> multiplier(static_cast<size_t>(g.n));
    for (int64_t j = 0; j < g.n; ++j)
      multiplier[static_cast<size_t>(j)] = a_scale * b_scale[b_scale.size() == 1 ? 0 : static_cast<size_t>(j)];
    const float* bias_data = bias ? bias->Data<float>() : nullptr;
    Tensor& y = ctx.Output(0, DataType::kFloat, g.output);
    if (y.NumElements() == 0) return;
    float* out = y.Data<float>();
    auto dequantize = [&](int64_t batch, int64_t first, int64_t rows, const int32_t* sums) {
      for (int64_t r = 0; r < rows; ++r) {
        const int32_t* sum = sums + r * g.n;
        float* row = out + (batch * g.m + first + r) * g.n;
        if (bias_data)
          for (int64_t j = 0; j < g.n; ++j) row[j] = static_cast<float>(sum[j]) * multiplier[j] + bias_data[j];
        else
          for (int64_t j = 0; j < g.n; ++j) row[j] = static_cast<float>(sum[j]) * multiplier[j];
      }
    };
    Sums(ctx, g, o.a, o.b, o.a_zero, o.b_zero, nullptr, dequantize);
  }
};

}  // namespace

struct ConstantWeightIntegerGemm::Impl {
  DataType b_type;
  std::vector<uint8_t> b;                 // the weights as given (bytes of int8 or uint8)
  std::vector<int32_t> b_zero;            // one, or one per column
  std::vector<int16_t> corrected;         // B - b_zero as int16 [k x n], for the exact GEMM
  ShapeCache<DnnlIntMatMul> primitives;   // per row count (VNNI CPUs)
  // oneDNN path: the rank-1 correction's column coefficients (weight shift - b_zero[j]; see DnnlIntMatMul), empty
  // when all are zero (a symmetric int8 B).
  std::vector<int32_t> coefficient;
};

ConstantWeightIntegerGemm::ConstantWeightIntegerGemm(const void* b, DataType b_type, int64_t k, int64_t n,
                                                     std::vector<int32_t> b_zero)
    : k_(k), n_(n), impl_(std::make_unique<Impl>()) {
  if (b_type != DataType::kInt8 && b_type != DataType::kUInt8)
    Fail(ErrorCode::kInvalidArgument, "integer GEMM weights must be int8 or uint8, got ", DataTypeName(b_type));
  if (b_zero.size() != 1 && static_cast<int64_t>(b_zero.size()) != n)
    Fail(ErrorCode::kInvalidArgument, "integer GEMM weights: ", b_zero.size(), " zero points for ", n, " columns");
  impl_->b_type = b_type;
  impl_->b.assign(static_cast<const uint8_t*>(b), static_cast<const uint8_t*>(b) + k * n);
  impl_->b_zero = std::move(b_zero);
  const int32_t shift = b_type == DataType::kUInt8 ? 128 : 0;  // what BuildDnnlIntMatMul subtracts from B
  for (int64_t j = 0; j < n; ++j)
    impl_->coefficient.push_back(shift - impl_->b_zero[impl_->b_zero.size() == 1 ? 0 : static_cast<size_t>(j)]);
  if (std::all_of(impl_->coefficient.begin(), impl_->coefficient.end(), [](int32_t c) { return c == 0; }))
    impl_->coefficient.clear();
  if (!DnnlInt8IsExact()) {
    impl_->corrected.resize(static_cast<size_t>(k * n));
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j) {
        const size_t i = static_cast<size_t>(kk * n + j);
        const int32_t v = b_type == DataType::kUInt8 ? static_cast<int32_t>(impl_->b[i])
                                                     : static_cast<int32_t>(static_cast<int8_t>(impl_->b[i]));
        impl_->corrected[i] = static_cast<int16_t>(v - impl_->b_zero[impl_->b_zero.size() == 1 ? 0 : j]);
      }
  }
}

ConstantWeightIntegerGemm::~ConstantWeightIntegerGemm() = default;

void ConstantWeightIntegerGemm::Run(KernelContext& ctx, const uint8_t* a, int64_t rows, int32_t a_zero,
                                    int32_t* sums) const {
  if (rows == 0 || n_ == 0) return;
  if (k_ == 0) return std::fill(sums, sums + rows * n_, 0);
  if (DnnlInt8IsExact()) {
    std::shared_ptr<const DnnlIntMatMul> mm = impl_->primitives.Get(ctx, {rows}, [&] {
      // BuildDnnlIntMatMul reads the constant weights from a tensor sharing the copy's bytes.
      const Tensor b = Tensor::Wrap(impl_->b_type, Shape{k_, n_}, impl_->b.data(), impl_->b.size(), MemoryInfo::Host());
      return BuildDnnlIntMatMul(rows, k_, n_, DataType::kUInt8, impl_->b_type, b);
    });
    if (mm->primitive) {
      RunDnnlIntMatMul(ctx, *mm, a, a_zero, impl_->b.data(), sums);
      if (!impl_->coefficient.empty()) AddRankOneCorrection(a, rows, k_, a_zero, impl_->coefficient, sums);
      return;
    }
  }
  // The exact int16 GEMM (no VNNI, or oneDNN rejected the problem): B corrected once, A per call.
  std::vector<int16_t> corrected_b;
  const int16_t* b16 = impl_->corrected.data();
  if (impl_->corrected.empty()) {  // a VNNI CPU whose oneDNN refused the geometry
    corrected_b.resize(static_cast<size_t>(k_ * n_));
    for (int64_t kk = 0; kk < k_; ++kk)
      for (int64_t j = 0; j < n_; ++j) {
        const size_t i = static_cast<size_t>(kk * n_ + j);
        const int32_t v = impl_->b_type == DataType::kUInt8 ? static_cast<int32_t>(impl_->b[i])
                                                            : static_cast<int32_t>(static_cast<int8_t>(impl_->b[i]));
        corrected_b[i] = static_cast<int16_t>(v - impl_->b_zero[impl_->b_zero.size() == 1 ? 0 : j]);
      }
    b16 = corrected_b.data();
  }
  constexpr int64_t kRowBlock = 16;
  const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  ctx.thread_pool().ParallelFor(blocks, std::max<int64_t>(1, 262144 / (kRowBlock * std::max<int64_t>(1, k_ * n_))),
                                [&](int64_t begin, int64_t end) {
                                  std::vector<int16_t> a_rows(static_cast<size_t>(kRowBlock * k_));
                                  for (int64_t block = begin; block < end; ++block) {
                                    const int64_t first = block * kRowBlock, count = std::min(kRowBlock, rows - first);
                                    for (int64_t i = 0; i < count * k_; ++i)
                                      a_rows[static_cast<size_t>(i)] =
                                          static_cast<int16_t>(static_cast<int32_t>(a[first * k_ + i]) - a_zero);
                                    GemmInt16(a_rows.data(), b16, sums + first * n_, count, n_, k_, n_, n_);
                                  }
                                });
}

void RegisterIntegerMatMulKernels(KernelRegistry& registry) {
  const std::vector<DataType> q8{DataType::kInt8, DataType::kUInt8};
  KernelDef integer;
  integer.op_type = "MatMulInteger";
  integer.since_version = 10;
  integer.input_types = {{0, q8}, {1, q8}, {2, q8}, {3, q8}};
  registry.Register<MatMulInteger>(std::move(integer));

  KernelDef to_float;
  to_float.op_type = "MatMulIntegerToFloat";
  to_float.domain = "com.microsoft";
  to_float.since_version = 1;
  to_float.input_types = {{0, q8}, {1, q8}, {2, {DataType::kFloat}}, {3, {DataType::kFloat}}, {4, q8}, {5, q8},
                          {6, {DataType::kFloat}}};
  registry.Register<MatMulIntegerToFloat>(std::move(to_float));

  // Opset 21 adds float16/bfloat16 scales (and float8 operands, which Tessera has no type for).
  const std::vector<DataType> f32{DataType::kFloat}, reals{DataType::kFloat, DataType::kFloat16, DataType::kBFloat16};
  for (const auto& [since, until, scales] : {std::tuple{10, 20, f32}, std::tuple{21, INT_MAX, reals}}) {
    KernelDef qlinear;
    qlinear.op_type = "QLinearMatMul";
    qlinear.since_version = since;
    qlinear.until_version = until;
    qlinear.input_types = {{0, q8}, {1, scales}, {2, q8}, {3, q8}, {4, scales}, {5, q8}, {6, scales}, {7, q8}};
    registry.Register<QLinearMatMul>(std::move(qlinear));
  }
}

}  // namespace tessera::cpu
