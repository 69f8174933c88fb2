// MatMul (numpy semantics: 1-D promotion, broadcast batch dims), ai.tessera::FusedMatMul (MatMul with a scale,
// bias, activation and addend epilogue; see graph/passes/matmul_epilogue_fusion.h) and Gemm (transA/transB,
// alpha, beta, unidirectionally broadcast C). float32 runs on the oneDNN matmul primitive, cached per shape with
// constant B pre-packed into oneDNN's preferred layout, except a single row times a 2-D B (RowTimesMatrix: the depth
// split over the threads, B streamed in its plain layout); other types use a reference loop.
#include <algorithm>
#include <optional>
#include <type_traits>

#include "providers/cpu/common/broadcast.h"
#include "providers/cpu/common/dnnl_utils.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

// A product of `batch` independent [M,K] x [K,N] matrices; a_offsets/b_offsets give each one's first
// element (broadcast batch dims repeat offsets).
struct BatchedProduct {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> a_offsets, b_offsets;
};

// Element offsets of each output batch entry in an input whose batch dims (left-padded with 1s to
// out_batch's rank) broadcast to out_batch.
std::vector<int64_t> BroadcastOffsets(const std::vector<int64_t>& out_batch, const std::vector<int64_t>& in_batch,
                                      int64_t matrix_size) {
  const size_t rank = out_batch.size();
  std::vector<int64_t> strides(rank, 0);
  for (int64_t i = static_cast<int64_t>(rank) - 1, stride = matrix_size; i >= 0; --i) {
    strides[i] = in_batch[i] == 1 ? 0 : stride;
    stride *= in_batch[i];
  }
  int64_t count = 1;
  for (int64_t d : out_batch) count *= d;
  std::vector<int64_t> offsets(count);
  for (int64_t index = 0; index < count; ++index) {
    int64_t offset = 0;
    for (int64_t r = index, i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
      offset += (r % out_batch[i]) * strides[i];
      r /= out_batch[i];
    }
    offsets[index] = offset;
  }
  return offsets;
}

template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// C[batch] = A[batch] x B[batch], row by row in parallel.
template <typename T>
void ReferenceBatchedProduct(const BatchedProduct& p, const T* a, const T* b, T* c, const ThreadPool& pool) {
  const int64_t rows = static_cast<int64_t>(p.a_offsets.size()) * p.m;
  pool.ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, p.k * p.n)), [&](int64_t begin, int64_t end) {
    std::vector<Accumulator<T>> acc(p.n);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t batch = row / p.m, i = row % p.m;
      const T* a_row = a + p.a_offsets[batch] + i * p.k;
      const T* b_mat = b + p.b_offsets[batch];
      std::fill(acc.begin(), acc.end(), Accumulator<T>{});
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const Accumulator<T> av = a_row[kk];
        const T* b_row = b_mat + kk * p.n;
        for (int64_t j = 0; j < p.n; ++j) acc[j] += av * static_cast<Accumulator<T>>(b_row[j]);
      }
      T* c_row = c + row * p.n;
      for (int64_t j = 0; j < p.n; ++j) c_row[j] = static_cast<T>(acc[j]);
    }
  });
}

// MatMul's shapes after 1-D promotion and batch broadcasting.
struct MatMulShapes {
  std::vector<int64_t> a_batch, b_batch, out_batch;  // all of out_batch's rank
  int64_t m = 0, k = 0, n = 0;
  Shape output;
};

MatMulShapes ResolveMatMulShapes(const Node& node, const Shape& a, const Shape& b) {
  if (a.rank() == 0 || b.rank() == 0)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": inputs must have rank >= 1, got A ", a.ToString(), " and B ",
         b.ToString());
  std::vector<int64_t> ad = a.dims(), bd = b.dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  MatMulShapes s;
  s.m = ad[ad.size() - 2];
  s.k = ad.back();
  s.n = bd.back();
  if (bd[bd.size() - 2] != s.k)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": inner dimensions differ: A ", a.ToString(), " x B ",
         b.ToString());
  const size_t batch_rank = std::max(ad.size(), bd.size()) - 2;
  s.a_batch.assign(batch_rank - (ad.size() - 2), 1);
  s.a_batch.insert(s.a_batch.end(), ad.begin(), ad.end() - 2);
  s.b_batch.assign(batch_rank - (bd.size() - 2), 1);
  s.b_batch.insert(s.b_batch.end(), bd.begin(), bd.end() - 2);
  for (size_t i = 0; i < batch_rank; ++i) {
    const int64_t x = s.a_batch[i], y = s.b_batch[i];
    if (x != y && x != 1 && y != 1)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": batch dimensions do not broadcast: A ", a.ToString(),
           " x B ", b.ToString());
    s.out_batch.push_back(x == 1 ? y : x);
  }
  std::vector<int64_t> out = s.out_batch;
  if (a.rank() > 1) out.push_back(s.m);
  if (b.rank() > 1) out.push_back(s.n);
  s.output = Shape(std::move(out));
  return s;
}

// A oneDNN matmul for one set of input shapes. packed_weights is set when B is a constant. Operands that
// enter through binary post-ops have their index in the post-op list (-1: not a post-op).
struct DnnlMatMul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory::desc src, weights, dst, bias;
  dnnl::memory packed_weights;
  dnnl::memory::desc bias_operand, addend_operand;
  int bias_post_op = -1, addend_post_op = -1;
  std::shared_ptr<DnnlMemoryPool> memories = std::make_shared<DnnlMemoryPool>();  // per concurrent caller
};

dnnl::memory::desc AnyLayout(const dnnl::memory::desc& d) {
  return dnnl::memory::desc(d.dims(), dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

// Builds the primitive; with `constant_b` the weights use oneDNN's preferred layout, packed once.
// Returns an entry without a primitive when oneDNN rejects the problem (callers fall back).
DnnlMatMul BuildDnnlMatMul(dnnl::memory::desc src, dnnl::memory::desc weights, dnnl::memory::desc dst,
                           dnnl::memory::desc bias, const dnnl::primitive_attr& attr, const Tensor& constant_b) {
  DnnlMatMul mm{{}, {}, src, weights, dst, bias, {}, {}, {}, -1, -1};
  try {
    dnnl::matmul::desc desc(src, constant_b.defined() ? AnyLayout(weights) : weights, bias, dst);
    mm.pd = dnnl::matmul::primitive_desc(desc, DnnlAttr(attr), DnnlEngine());
  } catch (const dnnl::error&) {
    return mm;
  }
  mm.primitive = dnnl::matmul(mm.pd);
  if (constant_b.defined()) {
    dnnl::memory plain(weights, DnnlEngine(), const_cast<void*>(constant_b.raw_data()));
    mm.packed_weights = ReorderInto(plain, mm.pd.weights_desc());
  }
  return mm;
}

// Runs `mm`; bias and addend are read when given (through oneDNN's bias or the binary post-ops).
void RunDnnlMatMul(KernelContext& ctx, const DnnlMatMul& mm, const float* a, const float* b, const float* bias,
                   float* y, const float* addend = nullptr) {
  DnnlMemoryPool::Lease bound = mm.memories->Borrow();
  std::array<DnnlArg, 5> args;
  size_t count = 0;
  args[count++] = {DNNL_ARG_SRC, &bound.Bind(0, mm.src, a)};
  args[count++] = {DNNL_ARG_WEIGHTS, mm.packed_weights ? &mm.packed_weights : &bound.Bind(1, mm.weights, b)};
  args[count++] = {DNNL_ARG_DST, &bound.Bind(2, mm.dst, y)};
  if (bias && mm.bias_post_op >= 0)
    args[count++] = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(mm.bias_post_op) | DNNL_ARG_SRC_1, &bound.Bind(3, mm.bias_operand, bias)};
  else if (bias)
    args[count++] = {DNNL_ARG_BIAS, &bound.Bind(3, mm.bias, bias)};
  if (addend && mm.addend_post_op >= 0)
    args[count++] = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(mm.addend_post_op) | DNNL_ARG_SRC_1,
                     &bound.Bind(4, mm.addend_operand, addend)};
  ExecuteDnnl(ctx, mm.primitive, mm.pd, std::span<const DnnlArg>(args.data(), count));
}

Tensor ConstantOrNone(const KernelInfo& info, size_t i) {
  const Tensor* t = info.ConstantInput(i);
  return t ? *t : Tensor();
}

// The oneDNN dims of one product: A's batch folded into M when B has no batch (one large 2-D product),
// otherwise every operand at the output's rank with 1s to broadcast.
struct ProductDims {
  dnnl::memory::dims src, weights, dst;
};

// `addend` (or nullptr) is the shape of an operand added to the product; folding keeps it expressible.
std::optional<ProductDims> ChooseProductDims(const MatMulShapes& s, const Shape* addend) {
  const bool b_has_batch = std::any_of(s.b_batch.begin(), s.b_batch.end(), [](int64_t d) { return d != 1; });
  const bool addend_folds = !addend || addend->rank() == 0 || addend->NumElements() == s.output.NumElements() ||
                            addend->NumElements() == (*addend)[addend->rank() - 1];
  if (!b_has_batch && addend_folds) {
    int64_t rows = s.m;
    for (int64_t d : s.a_batch) rows *= d;
    return ProductDims{{rows, s.k}, {s.k, s.n}, {rows, s.n}};
  }
  if (s.out_batch.size() + 2 > DNNL_MAX_NDIMS) return std::nullopt;
  ProductDims dims{ToDnnlDims(s.a_batch), ToDnnlDims(s.b_batch), ToDnnlDims(s.out_batch)};
  dims.src.insert(dims.src.end(), {s.m, s.k});
  dims.weights.insert(dims.weights.end(), {s.k, s.n});
  dims.dst.insert(dims.dst.end(), {s.m, s.n});
  return dims;
}

// `shape` (which broadcasts to the product's output) as a binary post-op operand of a product with output dims
// `dst`: the output's element count keeps `dst`, otherwise its dims are left-padded with 1s (a folded 2-D product
// then sees only its last dim, the only one that differs from 1).
dnnl::memory::dims OperandDims(const Shape& shape, const dnnl::memory::dims& dst) {
  int64_t dst_elements = 1;
  for (int64_t d : dst) dst_elements *= d;
  if (shape.NumElements() == dst_elements) return dst;
  dnnl::memory::dims dims(dst.size(), 1);
  const size_t rank = std::min(shape.rank(), dst.size());
  for (size_t i = 0; i < rank; ++i) dims[dst.size() - rank + i] = shape[shape.rank() - rank + i];
  return dims;
}

// x [K] times a row-major B [K, N] into y [N]: the rows of B from k0 to k1, four at a time, added into `out`.
__attribute__((always_inline)) inline void AccumulateRowsBody(const float* x, const float* b, int64_t n, int64_t k0,
                                                              int64_t k1, float* out) {
  std::fill(out, out + n, 0.0f);
  int64_t k = k0;
  for (; k + 4 <= k1; k += 4) {
    const float x0 = x[k], x1 = x[k + 1], x2 = x[k + 2], x3 = x[k + 3];
    const float* r0 = b + k * n;
    const float *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
    for (int64_t j = 0; j < n; ++j) out[j] += x0 * r0[j] + x1 * r1[j] + x2 * r2[j] + x3 * r3[j];
  }
  for (; k < k1; ++k) {
    const float xk = x[k];
    const float* r = b + k * n;
    for (int64_t j = 0; j < n; ++j) out[j] += xk * r[j];
  }
}
__attribute__((target("avx2,fma"))) void AccumulateRowsAvx2(const float* x, const float* b, int64_t n, int64_t k0,
                                                            int64_t k1, float* out) {
  AccumulateRowsBody(x, b, n, k0, k1, out);
}
void AccumulateRowsBaseline(const float* x, const float* b, int64_t n, int64_t k0, int64_t k1, float* out) {
  AccumulateRowsBody(x, b, n, k0, k1, out);
}

// One row times a plain row-major B [K, N] (a product of a single row: a decoding step's, a one-token encoder's),
// which reading B bounds: the depth is cut into one contiguous range per thread, each thread streams its rows of B
// front to back into a partial row, and the partial rows are added in range order. oneDNN's matmul on the pre-packed
// B read it at 28-29 GB/s on 2 threads of an AMD EPYC VM (BERT-base at one token: 768 x 3072 in 327 us), this loop at
// 30-34.5 GB/s (274 us). y holds the product (no epilogue).
void RowTimesMatrix(const ThreadPool& pool, const float* x, const float* b, int64_t k, int64_t n, float* y) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const auto accumulate = avx2 ? AccumulateRowsAvx2 : AccumulateRowsBaseline;
  const int64_t parts = std::clamp<int64_t>(pool.num_threads(), 1, std::max<int64_t>(1, k / 64));
  std::vector<float> partial(static_cast<size_t>((parts - 1) * n));
  pool.ParallelFor(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      accumulate(x, b, n, k * p / parts, k * (p + 1) / parts, p == 0 ? y : partial.data() + (p - 1) * n);
  });
  for (int64_t p = 1; p < parts; ++p) {
    const float* row = partial.data() + (p - 1) * n;
    for (int64_t j = 0; j < n; ++j) y[j] += row[j];
  }
}

// MatMul, and ai.tessera::FusedMatMul(A, B, bias?, addend?) with attributes alpha (default 1), activation and
// activation_params (dnnl_utils.h):
//   Y = activation(alpha * (A x B) + bias) + addend
// bias is 1-D with N elements (added to every row); addend broadcasts (numpy) with the product. FusedMatMul is
// float only; its epilogue runs as oneDNN post-ops where oneDNN accepts them, otherwise in loops afterwards.
class MatMul : public Kernel {
 public:
  explicit MatMul(const KernelInfo& info)
      : constant_b_(ConstantOrNone(info, 1)),
        fused_(info.node().domain == "ai.tessera"),
        alpha_(fused_ ? info.node().GetFloat("alpha", 1.0f) : 1.0f),
        activation_(fused_ ? ReadFusedActivation(info.node()) : FusedActivation{}) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    if (a.type() != b.type())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": A is ", DataTypeName(a.type()), " but B is ",
           DataTypeName(b.type()));
    const MatMulShapes s = ResolveMatMulShapes(ctx.node(), a.shape(), b.shape());
    if (fused_) return ComputeFused(ctx, s, a, b);
    Tensor& y = ctx.Output(0, a.type(), s.output);
    if (y.NumElements() == 0) return;
    switch (a.type()) {
      case DataType::kFloat: return ComputeFloat(ctx, s, a, b, nullptr, nullptr, y);
      case DataType::kDouble: return ComputeReference<double>(ctx, s, a, b, y);
      case DataType::kInt32: return ComputeReference<int32_t>(ctx, s, a, b, y);
      case DataType::kInt64: return ComputeReference<int64_t>(ctx, s, a, b, y);
      default:
        Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(a.type()));
    }
  }

 private:
  template <typename T>
  static void ComputeReference(KernelContext& ctx, const MatMulShapes& s, const Tensor& a, const Tensor& b, Tensor& y) {
    BatchedProduct p{s.m, s.k, s.n, BroadcastOffsets(s.out_batch, s.a_batch, s.m * s.k),
                     BroadcastOffsets(s.out_batch, s.b_batch, s.k * s.n)};
    ReferenceBatchedProduct(p, a.Data<T>(), b.Data<T>(), y.Data<T>(), ctx.thread_pool());
  }

  void ComputeFused(KernelContext& ctx, const MatMulShapes& s, const Tensor& a, const Tensor& b) const {
    const Tensor* bias = ctx.OptionalInput(2);
    const Tensor* addend = ctx.OptionalInput(3);
    if (bias && (bias->shape().rank() != 1 || bias->shape()[0] != s.n))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": bias ", bias->shape().ToString(),
           " must be 1-D with N = ", s.n, " elements");
    const Shape out = addend ? BroadcastShapes(ctx.node(), s.output, addend->shape()) : s.output;
    if (out == s.output) {
      Tensor& y = ctx.Output(0, DataType::kFloat, out);
      if (y.NumElements() > 0) ComputeFloat(ctx, s, a, b, bias, addend, y);
      return;
    }
    // The addend widens the result: the product goes to a temporary first.
    Tensor product = Tensor::Allocate(DataType::kFloat, s.output, ctx.allocator());
    if (product.NumElements() > 0) ComputeFloat(ctx, s, a, b, bias, nullptr, product);
    Tensor& y = ctx.Output(0, DataType::kFloat, out);
    BinaryBroadcast(ctx.thread_pool(), product.Data<float>(), product.shape(), addend->Data<float>(), addend->shape(),
                    y.Data<float>(), out, [](float x, float z) { return x + z; });
  }

  // y (the product's shape) = the epilogue applied to A x B; addend, when given, broadcasts to y.
  void ComputeFloat(KernelContext& ctx, const MatMulShapes& s, const Tensor& a, const Tensor& b, const Tensor* bias,
                    const Tensor* addend, Tensor& y) const {
    std::shared_ptr<const DnnlMatMul> mm;
    if (OneRowTimesMatrix(s, a, b)) {
      RowTimesMatrix(ctx.thread_pool(), a.Data<float>(), b.Data<float>(), s.k, s.n, y.Data<float>());
      ApplyEpilogue(ctx, s, bias, y);
    } else {
      if (s.k > 0) {
        std::vector<int64_t> key;
        AppendShapeKey(key, a.shape());
        AppendShapeKey(key, b.shape());
        key.push_back(bias != nullptr);
        if (addend) AppendShapeKey(key, addend->shape());
        mm = primitives_.Get(ctx, key, [&] { return Build(s, bias != nullptr, addend ? &addend->shape() : nullptr); });
      }
      if (!mm || !mm->primitive) {
        ComputeReference<float>(ctx, s, a, b, y);
        ApplyEpilogue(ctx, s, bias, y);
      } else {
        RunDnnlMatMul(ctx, *mm, a.Data<float>(), b.Data<float>(), bias ? bias->Data<float>() : nullptr,
                      y.Data<float>(), addend ? addend->Data<float>() : nullptr);
      }
    }
    if (addend && (!mm || mm->addend_post_op < 0))
      BinaryBroadcast(ctx.thread_pool(), y.Data<float>(), y.shape(), addend->Data<float>(), addend->shape(),
                      y.Data<float>(), y.shape(), [](float x, float z) { return x + z; });
  }

  // Whether the product is a single row of A times a 2-D B deep and wide enough for RowTimesMatrix to pay, and
  // narrow enough that a thread's partial row (at most 16 KB) stays in its core's cache while B streams past it
  // (wider ones, e.g. a language model's vocabulary projection, keep oneDNN's blocked walk).
  static bool OneRowTimesMatrix(const MatMulShapes& s, const Tensor& a, const Tensor& b) {
    return a.NumElements() == s.k && b.shape().rank() == 2 && s.m == 1 && s.k >= 64 && s.n >= 64 && s.n <= 4096;
  }

  // y = activation(alpha * y + bias), for the paths that do not run on oneDNN.
  void ApplyEpilogue(KernelContext& ctx, const MatMulShapes& s, const Tensor* bias, Tensor& y) const {
    if (!fused_) return;
    float* data = y.Data<float>();
    const int64_t rows = y.NumElements() / std::max<int64_t>(1, s.n);
    const float* bias_data = bias ? bias->Data<float>() : nullptr;
    ctx.thread_pool().ParallelFor(rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        float* r = data + row * s.n;
        for (int64_t j = 0; j < s.n; ++j) r[j] = alpha_ * r[j] + (bias_data ? bias_data[j] : 0.0f);
        ApplyActivation(activation_, r, s.n);
      }
    });
  }

  // The primitive with the epilogue as post-ops: alpha as a linear eltwise, bias as oneDNN's bias (as a binary
  // post-op after alpha when alpha != 1), the activation, the addend as a binary add. When oneDNN rejects the
  // addend's broadcast the primitive leaves it out (addend_post_op = -1) and the caller adds it.
  DnnlMatMul Build(const MatMulShapes& s, bool has_bias, const Shape* addend) const {
    using dnnl::algorithm;
    const bool addend_fusable = addend && s.output.rank() == s.out_batch.size() + 2;
    std::optional<ProductDims> dims = ChooseProductDims(s, addend_fusable ? addend : nullptr);
    if (!dims) return {};
    dnnl::memory::dims bias_dims(dims->dst.size(), 1);
    bias_dims.back() = s.n;
    const dnnl::memory::desc bias_desc = PlainF32Desc(bias_dims);
    const bool bias_as_post_op = has_bias && alpha_ != 1.0f;
    auto build = [&](bool with_addend) {
      dnnl::post_ops ops;
      if (alpha_ != 1.0f) ops.append_eltwise(1.0f, algorithm::eltwise_linear, alpha_, 0.0f);
      int bias_index = -1, addend_index = -1;
      if (bias_as_post_op) {
        bias_index = ops.len();
        ops.append_binary(algorithm::binary_add, bias_desc);
      }
      AppendActivation(ops, activation_);
      const dnnl::memory::desc addend_desc =
          with_addend ? PlainF32Desc(OperandDims(*addend, dims->dst)) : dnnl::memory::desc();
      if (with_addend) {
        addend_index = ops.len();
        ops.append_binary(algorithm::binary_add, addend_desc);
      }
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      DnnlMatMul mm = BuildDnnlMatMul(PlainF32Desc(dims->src), PlainF32Desc(dims->weights), PlainF32Desc(dims->dst),
                                      has_bias && !bias_as_post_op ? bias_desc : dnnl::memory::desc(), attr,
                                      constant_b_);
      mm.bias_operand = bias_desc;
      mm.bias_post_op = bias_index;
      mm.addend_operand = addend_desc;
      mm.addend_post_op = addend_index;
      return mm;
    };
    if (addend_fusable) {
      DnnlMatMul mm = build(true);
      if (mm.primitive) return mm;
    }
    return build(false);
  }

  Tensor constant_b_;
  bool fused_;
  float alpha_;
  FusedActivation activation_;
  ShapeCache<DnnlMatMul> primitives_;
};

// Gemm's attributes and the shapes they imply.
struct GemmShapes {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> c_dims;  // C as 2-D ({1,1}, {1,N}, {M,1}, {M,N}, ...); empty without C
};

class Gemm : public Kernel {
 public:
  explicit Gemm(const KernelInfo& info)
      : trans_a_(info.node().GetInt("transA", 0) != 0),
        trans_b_(info.node().GetInt("transB", 0) != 0),
        alpha_(info.node().GetFloat("alpha", 1.0f)),
        beta_(info.node().GetFloat("beta", 1.0f)),
        constant_b_(ConstantOrNone(info, 1)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    const Tensor* c = beta_ != 0.0f ? ctx.OptionalInput(2) : nullptr;
    const GemmShapes s = Resolve(ctx.node(), a.shape(), b.shape(), c);
    Tensor& y = ctx.Output(0, a.type(), Shape{s.m, s.n});
    if (y.NumElements() == 0) return;
    if (a.type() == DataType::kFloat && s.k > 0) {
      std::vector<int64_t> key;
      AppendShapeKey(key, a.shape());
      AppendShapeKey(key, b.shape());
      AppendShapeKey(key, Shape(s.c_dims));
      std::shared_ptr<const DnnlMatMul> mm = primitives_.Get(ctx, key, [&] { return Build(s); });
      if (mm->primitive) return RunDnnl(ctx, *mm, s, a, b, c, y);
    }
    if (a.type() == DataType::kFloat) return ComputeReference<float>(ctx, s, a, b, c, y);
    ComputeReference<double>(ctx, s, a, b, c, y);
  }

 private:
  GemmShapes Resolve(const Node& node, const Shape& a, const Shape& b, const Tensor* c) const {
    if (a.rank() != 2 || b.rank() != 2)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": A ", a.ToString(), " and B ", b.ToString(),
           " must be 2-D");
    GemmShapes s;
    s.m = trans_a_ ? a[1] : a[0];
    s.k = trans_a_ ? a[0] : a[1];
    s.n = trans_b_ ? b[0] : b[1];
    if ((trans_b_ ? b[1] : b[0]) != s.k)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": inner dimensions differ: A ", a.ToString(), " (transA ",
           trans_a_, ") x B ", b.ToString(), " (transB ", trans_b_, ")");
    if (!c) return s;
    const Shape& cs = c->shape();
    s.c_dims = cs.rank() == 0 ? std::vector<int64_t>{1, 1}
               : cs.rank() == 1 ? std::vector<int64_t>{1, cs[0]}
                                : cs.dims();
    if (cs.rank() > 2 || (s.c_dims[0] != 1 && s.c_dims[0] != s.m) || (s.c_dims[1] != 1 && s.c_dims[1] != s.n))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": C ", cs.ToString(), " does not broadcast to [", s.m, ",",
           s.n, "]");
    return s;
  }

  // alpha == beta == 1 maps C onto oneDNN's (broadcasting) bias; otherwise Y starts as C and a sum
  // post-op adds alpha * A x B to beta * Y.
  bool CAsBias(const GemmShapes& s) const { return !s.c_dims.empty() && alpha_ == 1.0f && beta_ == 1.0f; }

  DnnlMatMul Build(const GemmShapes& s) const {
    using dnnl::memory;
    memory::desc src({s.m, s.k}, memory::data_type::f32, trans_a_ ? memory::dims{1, s.m} : memory::dims{s.k, 1});
    memory::desc weights({s.k, s.n}, memory::data_type::f32, trans_b_ ? memory::dims{1, s.k} : memory::dims{s.n, 1});
    dnnl::primitive_attr attr;
    if (alpha_ != 1.0f) attr.set_output_scales(0, {alpha_});
    if (!s.c_dims.empty() && !CAsBias(s)) {
      dnnl::post_ops ops;
      ops.append_sum(beta_);
      attr.set_post_ops(ops);
    }
    memory::desc bias = CAsBias(s) ? PlainF32Desc(ToDnnlDims(s.c_dims)) : memory::desc();
    return BuildDnnlMatMul(src, weights, PlainF32Desc({s.m, s.n}), bias, attr, constant_b_);
  }

  void RunDnnl(KernelContext& ctx, const DnnlMatMul& mm, const GemmShapes& s, const Tensor& a, const Tensor& b,
               const Tensor* c, Tensor& y) const {
    const float* bias = nullptr;
    if (c && CAsBias(s)) bias = c->Data<float>();
    else if (c) BroadcastC(s, c->Data<float>(), y.Data<float>(), 1.0f);
    RunDnnlMatMul(ctx, mm, a.Data<float>(), b.Data<float>(), bias, y.Data<float>());
  }

  // y[M,N] = scale * C broadcast.
  template <typename T>
  static void BroadcastC(const GemmShapes& s, const T* c, T* y, double scale) {
    const int64_t row_stride = s.c_dims[0] == 1 ? 0 : s.c_dims[1], col_stride = s.c_dims[1] == 1 ? 0 : 1;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) y[i * s.n + j] = static_cast<T>(scale * c[i * row_stride + j * col_stride]);
  }

  template <typename T>
  void ComputeReference(KernelContext& ctx, const GemmShapes& s, const Tensor& a, const Tensor& b, const Tensor* c,
                        Tensor& y) const {
    const T* ad = a.Data<T>();
    const T* bd = b.Data<T>();
    T* yd = y.Data<T>();
    if (c) BroadcastC(s, c->Data<T>(), yd, beta_);
    ctx.thread_pool().ParallelFor(s.m, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double acc = 0;
          for (int64_t kk = 0; kk < s.k; ++kk)
            acc += static_cast<double>(trans_a_ ? ad[kk * s.m + i] : ad[i * s.k + kk]) *
                   static_cast<double>(trans_b_ ? bd[j * s.k + kk] : bd[kk * s.n + j]);
          const double prior = c ? static_cast<double>(yd[i * s.n + j]) : 0.0;
          yd[i * s.n + j] = static_cast<T>(alpha_ * acc + prior);
        }
    });
  }

  bool trans_a_, trans_b_;
  float alpha_, beta_;
  Tensor constant_b_;
  ShapeCache<DnnlMatMul> primitives_;
};

KernelDef Def(const char* op, int since, std::vector<DataType> types) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.input_types = {{0, types}, {1, types}};
  return def;
}

}  // namespace

void RegisterMatMulKernels(KernelRegistry& registry) {
  registry.Register<MatMul>(Def("MatMul", 1, {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64}));
  registry.Register<Gemm>(Def("Gemm", 1, {DataType::kFloat, DataType::kDouble}));
  KernelDef fused = Def("FusedMatMul", 1, {DataType::kFloat});
  fused.domain = "ai.tessera";
  fused.input_types[2] = {DataType::kFloat};
  fused.input_types[3] = {DataType::kFloat};
  registry.Register<MatMul>(std::move(fused));
}

}  // namespace tessera::cpu
