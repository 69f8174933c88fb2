// MatMul (numpy semantics, batched with broadcasting) and Gemm (transposes, alpha, beta, C broadcast), both on the
// tiled matrix-product shader (shaders/matmul.comp). Transposed operands are read through strides, never copied.
#include <algorithm>
#include <climits>

#include "tessera/ep/broadcast.h"
#include "tessera/ep/fused_activation.h"
#include "tessera/status.h"
#include "vulkan_kernels.h"

namespace tessera::vulkan_ep {

namespace {

struct MatMulPush {
  uint64_t a, b, c, bias;
  uint32_t M, N, K;
  uint32_t a_row, a_col, b_row, b_col;
  uint32_t a_batch, b_batch, c_batch;
  float alpha, beta;
  uint32_t bias_row, bias_col, has_bias;
  uint32_t act;
  float act_a, act_b;
  uint32_t splits;
  uint32_t has_addend;
  uint64_t addend;  // FusedMatMul's addend of C's shape (has_addend), added after the activation
};
static_assert(sizeof(MatMulPush) <= kPushConstantBytes);

struct MatMulReducePush {
  uint64_t partial, bias, c;
  uint32_t total, N, MN, splits;
  float alpha, beta;
  uint32_t bias_row, bias_col, has_bias, act;
  float act_a, act_b;
  uint32_t has_addend;
  uint64_t addend;
};

// Records `batches` products of push.M x push.N (at push.c, batch stride push.c_batch == M * N), split along the depth
// when the grid is too small to fill the GPU (SplitsFor): partial sums in a scratch buffer, then matmul_reduce.
void DispatchProduct(const KernelContext& ctx, VulkanStream& stream, const char* suffix, MatMulPush push,
                     uint32_t batches) {
  const uint32_t x = (push.N + 63) / 64, y = (push.M + 63) / 64;
  const uint32_t splits = SplitsFor(uint64_t{x} * y * batches, push.K);
  push.splits = splits;
  const std::string shader = ProductShader(stream, "matmul", suffix);
  if (splits == 1) {
    stream.Dispatch(shader, &push, sizeof(push), x, y, batches);
    return;
  }
  const uint64_t total = uint64_t{push.M} * push.N * batches;
  Tensor partial = Tensor::Allocate(DataType::kFloat, Shape({static_cast<int64_t>(total * splits)}), ctx.allocator());
  MatMulPush first = push;
  first.c = Address(ctx, partial, "split-K partial sums");
  stream.Dispatch(shader, &first, sizeof(first), x, y, batches * splits);
  MatMulReducePush reduce{first.c,       push.bias,  push.c,       U32(ctx, static_cast<int64_t>(total)),
                          push.N,        push.M * push.N, splits, push.alpha,
                          push.beta,     push.bias_row, push.bias_col, push.has_bias,
                          push.act,      push.act_a,    push.act_b, push.has_addend, push.addend};
  DispatchLinear(stream, std::string("matmul_reduce") + suffix, &reduce, sizeof(reduce), total);
  stream.KeepAlive(partial.buffer());
}

// MatMul, and ai.tessera::FusedMatMul: Y = act(alpha * A x B + bias) + addend (matmul_epilogue_fusion), alpha, the
// bias (a vector of N) and the activation in the product's epilogue; the addend in the epilogue too when it has the
// product's shape, else (any shape that broadcasts with the product) added by the broadcasting Add shader, in place
// when it does not widen the product.
class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const KernelInfo& info) : fused_(info.node().op_type == "FusedMatMul") {
    if (!fused_) return;
    alpha_ = info.node().GetFloat("alpha", 1.0f);
    activation_ = ReadFusedActivation(info.node());
  }
  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    const Tensor* bias = fused_ ? ctx.OptionalInput(2) : nullptr;
    const Tensor* addend = fused_ ? ctx.OptionalInput(3) : nullptr;
    if (a.type() != b.type())
      Fail(ErrorCode::kInvalidArgument, node, ": inputs have types ", DataTypeName(a.type()), " and ",
           DataTypeName(b.type()));
    if (a.shape().rank() == 0 || b.shape().rank() == 0)
      Fail(ErrorCode::kInvalidArgument, node, ": MatMul inputs must have rank >= 1, got ", a.shape().ToString(),
           " and ", b.shape().ToString());
    std::vector<int64_t> ad = a.shape().dims(), bd = b.shape().dims();
    const bool a_vector = ad.size() == 1, b_vector = bd.size() == 1;
    if (a_vector) ad.insert(ad.begin(), 1);
    if (b_vector) bd.push_back(1);
    const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
    if (bd[bd.size() - 2] != K)
      Fail(ErrorCode::kInvalidArgument, node, ": inner dimensions differ: ", a.shape().ToString(), " x ",
           b.shape().ToString());
    // Batch dimensions, broadcast.
    const std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
    const size_t batch_rank = std::max(a_batch.size(), b_batch.size());
    std::vector<int64_t> out_batch(batch_rank), a_strides(batch_rank, 0), b_strides(batch_rank, 0);
    int64_t a_stride = M * K, b_stride = K * N;
    for (size_t i = 0; i < batch_rank; ++i) {
      const size_t o = batch_rank - 1 - i;
      const int64_t da = i < a_batch.size() ? a_batch[a_batch.size() - 1 - i] : 1;
      const int64_t db = i < b_batch.size() ? b_batch[b_batch.size() - 1 - i] : 1;
      if (da != db && da != 1 && db != 1)
        Fail(ErrorCode::kInvalidArgument, node, ": batch dimensions of ", a.shape().ToString(), " and ",
             b.shape().ToString(), " cannot be broadcast");
      out_batch[o] = std::max(da, db);
      if (da == 0 || db == 0) out_batch[o] = 0;
      a_strides[o] = da == 1 ? 0 : a_stride;
      b_strides[o] = db == 1 ? 0 : b_stride;
      a_stride *= da;
      b_stride *= db;
    }
    std::vector<int64_t> out_dims = out_batch;
    if (!a_vector) out_dims.push_back(M);
    if (!b_vector) out_dims.push_back(N);
    if (bias != nullptr && (bias->type() != a.type() || bias->shape().rank() != 1 || bias->shape()[0] != N))
      Fail(ErrorCode::kInvalidArgument, node, ": the bias must be a vector of ", N, " ", DataTypeName(a.type()),
           ", got ", bias->Describe());
    // The product goes to Y, or to a temporary when the addend widens it.
    Shape y_shape(out_dims);
    if (addend != nullptr) {
      if (addend->type() != a.type())
        Fail(ErrorCode::kInvalidArgument, node, ": the addend is ", DataTypeName(addend->type()), ", the product ",
             DataTypeName(a.type()));
      y_shape = BroadcastShapes(node, Shape(out_dims), addend->shape());
    }
    Tensor& y = ctx.Output(0, a.type(), y_shape);
    const bool widened = y_shape != Shape(out_dims);
    Tensor c = widened ? Tensor::Allocate(a.type(), Shape(out_dims), ctx.allocator()) : y;  // y's buffer if not widened
    if (y.NumElements() == 0) return;
    // An addend of the product's own shape is added in the product's epilogue; others by the broadcasting Add.
    const Tensor* in_epilogue = addend != nullptr && addend->shape() == Shape(out_dims) ? addend : nullptr;
    if (c.NumElements() > 0)
      RecordProduct(ctx, a, b, bias, in_epilogue, c, M, N, K, batch_rank, out_batch, a_strides, b_strides);
    if (addend != nullptr && in_epilogue == nullptr) {
      RecordBroadcastBinary(ctx, std::string("binary") + FloatSuffix(ctx, a.type()), /*Add*/ 0u, c, *addend, y);
      if (widened) StreamOf(ctx).KeepAlive(c.buffer());
    }
  }

 private:
  void RecordProduct(const KernelContext& ctx, const Tensor& a, const Tensor& b, const Tensor* bias,
                     const Tensor* addend, Tensor& c,
                     int64_t M, int64_t N, int64_t K, size_t batch_rank, const std::vector<int64_t>& out_batch,
                     const std::vector<int64_t>& a_strides, const std::vector<int64_t>& b_strides) const {
    int64_t batches = 1;
    for (int64_t d : out_batch) batches *= d;

    VulkanStream& stream = StreamOf(ctx);
    const char* suffix = FloatSuffix(ctx, a.type());
    const size_t element = SizeOf(a.type());
    MatMulPush push{};
    push.a = Address(ctx, a, "A");
    push.b = Address(ctx, b, "B");
    push.c = Address(ctx, c, "Y");
    push.bias = push.c;
    push.N = U32(ctx, N);
    push.K = U32(ctx, K);
    push.a_row = U32(ctx, K);
    push.a_col = 1;
    push.b_row = U32(ctx, N);
    push.b_col = 1;
    push.alpha = alpha_;
    push.c_batch = U32(ctx, M * N);
    if (bias != nullptr) {  // bias[j] for every row
      push.bias = Address(ctx, *bias, "bias");
      push.has_bias = 1;
      push.beta = 1.0f;
      push.bias_row = 0;
      push.bias_col = 1;
    }
    if (addend != nullptr) {
      push.addend = Address(ctx, *addend, "addend");
      push.has_addend = 1;
    }
    push.act = static_cast<uint32_t>(ShaderActivation(activation_));
    push.act_a = activation_.alpha;
    push.act_b = activation_.beta;
    // B shared by every batch with A's batches contiguous: one product of (batches * M) rows.
    bool b_shared = true, a_contiguous = true;
    int64_t expect = M * K;
    for (size_t i = batch_rank; i-- > 0;) {
      if (b_strides[i] != 0) b_shared = false;
      if (out_batch[i] != 1 && a_strides[i] != expect) a_contiguous = false;
      expect *= out_batch[i];
    }
    if (b_shared && a_contiguous) {
      push.M = U32(ctx, batches * M);
      DispatchProduct(ctx, stream, suffix, push, 1);
      return;
    }
    push.M = U32(ctx, M);
    // One batch dimension the shader walks (the innermost), the others looped here.
    const int64_t inner = batch_rank == 0 ? 1 : out_batch.back();
    push.a_batch = batch_rank == 0 ? 0 : U32(ctx, a_strides.back());
    push.b_batch = batch_rank == 0 ? 0 : U32(ctx, b_strides.back());
    const int64_t outer = batches / std::max<int64_t>(inner, 1);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t rest = o, a_off = 0, b_off = 0;
      for (size_t i = batch_rank >= 1 ? batch_rank - 1 : 0; i-- > 0;) {
        const int64_t idx = rest % out_batch[i];
        rest /= out_batch[i];
        a_off += idx * a_strides[i];
        b_off += idx * b_strides[i];
      }
      MatMulPush part = push;
      part.a += a_off * element;
      part.b += b_off * element;
      part.c += o * inner * M * N * element;
      if (part.has_addend != 0) part.addend += o * inner * M * N * element;
      DispatchProduct(ctx, stream, suffix, part, U32(ctx, inner));
    }
  }

  bool fused_;
  float alpha_ = 1.0f;
  FusedActivation activation_;
};

class GemmKernel : public Kernel {
 public:
  explicit GemmKernel(const KernelInfo& info)
      : trans_a_(info.node().GetInt("transA", 0) != 0),
        trans_b_(info.node().GetInt("transB", 0) != 0),
        alpha_(info.node().GetFloat("alpha", 1.0f)),
        beta_(info.node().GetFloat("beta", 1.0f)) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    const Tensor* c = ctx.OptionalInput(2);
    if (a.shape().rank() != 2 || b.shape().rank() != 2)
      Fail(ErrorCode::kInvalidArgument, node, ": A and B must be 2-D, got ", a.shape().ToString(), " and ",
           b.shape().ToString());
    const int64_t M = trans_a_ ? a.shape()[1] : a.shape()[0], K = trans_a_ ? a.shape()[0] : a.shape()[1];
    const int64_t KB = trans_b_ ? b.shape()[1] : b.shape()[0], N = trans_b_ ? b.shape()[0] : b.shape()[1];
    if (K != KB)
      Fail(ErrorCode::kInvalidArgument, node, ": inner dimensions differ: A ", a.shape().ToString(),
           trans_a_ ? " (transposed)" : "", ", B ", b.shape().ToString(), trans_b_ ? " (transposed)" : "");
    Tensor& y = ctx.Output(0, a.type(), Shape({M, N}));
    if (y.NumElements() == 0) return;
    MatMulPush push{};
    push.a = Address(ctx, a, "A");
    push.b = Address(ctx, b, "B");
    push.c = Address(ctx, y, "Y");
    push.bias = push.c;
    push.M = U32(ctx, M);
    push.N = U32(ctx, N);
    push.K = U32(ctx, K);
    push.a_row = trans_a_ ? 1 : U32(ctx, K);
    push.a_col = trans_a_ ? U32(ctx, M) : 1;
    push.b_row = trans_b_ ? 1 : U32(ctx, N);
    push.b_col = trans_b_ ? U32(ctx, K) : 1;
    push.alpha = alpha_;
    push.beta = beta_;
    if (c != nullptr && beta_ != 0.0f) {
      const std::vector<int64_t>& cd = c->shape().dims();
      if (cd.size() > 2)
        Fail(ErrorCode::kInvalidArgument, node, ": C must have rank <= 2, got ", c->shape().ToString());
      const int64_t rows = cd.size() == 2 ? cd[0] : 1, cols = cd.empty() ? 1 : cd.back();
      if ((rows != 1 && rows != M) || (cols != 1 && cols != N))
        Fail(ErrorCode::kInvalidArgument, node, ": C ", c->shape().ToString(), " does not broadcast to [", M, ",", N,
             "]");
      push.bias = Address(ctx, *c, "C");
      push.bias_row = rows == 1 ? 0 : U32(ctx, cols);
      push.bias_col = cols == 1 ? 0 : 1;
      push.has_bias = 1;
    }
    DispatchProduct(ctx, StreamOf(ctx), FloatSuffix(ctx, a.type()), push, 1);
  }

 private:
  bool trans_a_, trans_b_;
  float alpha_, beta_;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device) {
  const std::vector<DataType> floats = FloatTypes(device);
  registry.Register<MatMulKernel>(Def("MatMul", "", 1, kLatestOnnxOpset, {{0, floats}, {1, floats}}));
  registry.Register<MatMulKernel>(
      Def("FusedMatMul", "ai.tessera", 1, INT_MAX, {{0, floats}, {1, floats}, {2, floats}, {3, floats}}));
  registry.Register<GemmKernel>(Def("Gemm", "", 7, kLatestOnnxOpset, {{0, floats}, {1, floats}, {2, floats}}));
}

}  // namespace tessera::vulkan_ep
