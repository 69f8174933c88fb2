// MatMul (numpy semantics: 1-D promotion, broadcast batch dims) and Gemm (transA/transB, alpha, beta,
// unidirectionally broadcast C). float32 runs on the oneDNN matmul primitive, cached per shape with
// constant B pre-packed into oneDNN's preferred layout; other types use a reference loop.
#include <algorithm>
#include <type_traits>

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

// A oneDNN matmul for one set of input shapes. packed_weights is set when B is a constant.
struct DnnlMatMul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory::desc src, weights, dst, bias;
  dnnl::memory packed_weights;
};

dnnl::memory::desc AnyLayout(const dnnl::memory::desc& d) {
  return dnnl::memory::desc(d.dims(), dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

// Builds the primitive; with `constant_b` the weights use oneDNN's preferred layout, packed once.
// Returns an entry without a primitive when oneDNN rejects the problem (callers fall back).
DnnlMatMul BuildDnnlMatMul(dnnl::memory::desc src, dnnl::memory::desc weights, dnnl::memory::desc dst,
                           dnnl::memory::desc bias, const dnnl::primitive_attr& attr, const Tensor& constant_b) {
  DnnlMatMul mm{{}, {}, src, weights, dst, bias, {}};
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

void RunDnnlMatMul(KernelContext& ctx, const DnnlMatMul& mm, const float* a, const float* b, const float* bias,
                   float* y) {
  const dnnl::engine& engine = DnnlEngine();
  dnnl::memory weights = mm.packed_weights ? mm.packed_weights : dnnl::memory(mm.weights, engine, const_cast<float*>(b));
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(mm.src, engine, const_cast<float*>(a))},
                                             {DNNL_ARG_WEIGHTS, weights},
                                             {DNNL_ARG_DST, dnnl::memory(mm.dst, engine, y)}};
  if (bias) args[DNNL_ARG_BIAS] = dnnl::memory(mm.bias, engine, const_cast<float*>(bias));
  ExecuteDnnl(ctx, mm.primitive, mm.pd, std::move(args));
}

Tensor ConstantOrNone(const KernelInfo& info, size_t i) {
  const Tensor* t = info.ConstantInput(i);
  return t ? *t : Tensor();
}

class MatMul : public Kernel {
 public:
  explicit MatMul(const KernelInfo& info) : constant_b_(ConstantOrNone(info, 1)) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    if (a.type() != b.type())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": A is ", DataTypeName(a.type()), " but B is ",
           DataTypeName(b.type()));
    const MatMulShapes s = ResolveMatMulShapes(ctx.node(), a.shape(), b.shape());
    Tensor& y = ctx.Output(0, a.type(), s.output);
    if (y.NumElements() == 0) return;
    switch (a.type()) {
      case DataType::kFloat: return ComputeFloat(ctx, s, a, b, y);
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

  void ComputeFloat(KernelContext& ctx, const MatMulShapes& s, const Tensor& a, const Tensor& b, Tensor& y) const {
    if (s.k == 0) {
      std::fill_n(y.Data<float>(), y.NumElements(), 0.0f);
      return;
    }
    std::vector<int64_t> key;
    AppendShapeKey(key, a.shape());
    AppendShapeKey(key, b.shape());
    std::shared_ptr<const DnnlMatMul> mm = primitives_.Get(key, [&] { return Build(s); });
    if (!mm->primitive) return ComputeReference<float>(ctx, s, a, b, y);
    RunDnnlMatMul(ctx, *mm, a.Data<float>(), b.Data<float>(), nullptr, y.Data<float>());
  }

  // When B has no batch (the common activations x weights case) A's batch folds into M, which gives
  // oneDNN one large 2-D product; otherwise all operands get the output's rank with 1s to broadcast.
  DnnlMatMul Build(const MatMulShapes& s) const {
    const bool b_has_batch = std::any_of(s.b_batch.begin(), s.b_batch.end(), [](int64_t d) { return d != 1; });
    dnnl::memory::dims src, weights, dst;
    if (!b_has_batch) {
      int64_t rows = s.m;
      for (int64_t d : s.a_batch) rows *= d;
      src = {rows, s.k};
      weights = {s.k, s.n};
      dst = {rows, s.n};
    } else if (s.out_batch.size() + 2 > DNNL_MAX_NDIMS) {
      return {};
    } else {
      src = ToDnnlDims(s.a_batch);
      weights = ToDnnlDims(s.b_batch);
      dst = ToDnnlDims(s.out_batch);
      src.insert(src.end(), {s.m, s.k});
      weights.insert(weights.end(), {s.k, s.n});
      dst.insert(dst.end(), {s.m, s.n});
    }
    return BuildDnnlMatMul(PlainF32Desc(src), PlainF32Desc(weights), PlainF32Desc(dst), {}, {}, constant_b_);
  }

  Tensor constant_b_;
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
      std::shared_ptr<const DnnlMatMul> mm = primitives_.Get(key, [&] { return Build(s); });
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
}

}  // namespace tessera::cpu
