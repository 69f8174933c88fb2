// Gemm and MatMul through cuBLAS (float32 with TF32 per use_tf32, float16 accumulating in float32).
//
// Tessera tensors are row-major and cuBLAS is column-major: a row-major product out = a * b is computed
// as the column-major product out^T = b^T * a^T, which reads the same memory without any transpose.
#include <climits>

#include "providers/cpu/common/broadcast.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

// Row-major, batched: out[i] = alpha * op(a[i]) * op(b[i]) + beta * out[i] for i < batch, where
// operand i starts stride elements after operand i - 1 (stride 0: one matrix shared by all).
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_out = 0;
};

int CheckedInt(const KernelContext& ctx, int64_t value) {
  if (value > INT_MAX)
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": dimension ", value, " exceeds cuBLAS's 32-bit sizes");
  return static_cast<int>(value);
}

void RowMajorGemm(const KernelContext& ctx, const CudaExecutionProvider& ep, DataType type, const GemmCall& c) {
  const bool half = type == DataType::kFloat16;
  const cudaDataType_t data = half ? CUDA_R_16F : CUDA_R_32F;
  const cublasComputeType_t compute =
      !half && ep.options().use_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const int lda = CheckedInt(ctx, c.trans_a ? c.m : c.k);
  const int ldb = CheckedInt(ctx, c.trans_b ? c.k : c.n);
  LibraryHandles::Lease lease = ep.handles().Acquire(StreamOf(ctx));
  CheckCublas(cublasGemmStridedBatchedEx(lease.cublas(), c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, CheckedInt(ctx, c.n),
                                         CheckedInt(ctx, c.m), CheckedInt(ctx, c.k), &c.alpha, c.b, data, ldb,
                                         c.stride_b, c.a, data, lda, c.stride_a, &c.beta, c.out, data,
                                         CheckedInt(ctx, c.n), c.stride_out, CheckedInt(ctx, c.batch), compute,
                                         CUBLAS_GEMM_DEFAULT),
              ctx.node().Describe(), ": cublasGemmStridedBatchedEx");
}

class GemmKernel : public Kernel {
 public:
  explicit GemmKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        alpha_(info.node().GetFloat("alpha", 1.0f)),
        beta_(info.node().GetFloat("beta", 1.0f)),
        trans_a_(info.node().GetInt("transA", 0) != 0),
        trans_b_(info.node().GetInt("transB", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    const Tensor* c = ctx.OptionalInput(2);
    if (a.shape().rank() != 2 || b.shape().rank() != 2)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": A ", a.shape().ToString(), " and B ",
           b.shape().ToString(), " must be matrices");
    GemmCall call;
    call.trans_a = trans_a_;
    call.trans_b = trans_b_;
    call.m = trans_a_ ? a.shape()[1] : a.shape()[0];
    call.k = trans_a_ ? a.shape()[0] : a.shape()[1];
    call.n = trans_b_ ? b.shape()[0] : b.shape()[1];
    if ((trans_b_ ? b.shape()[1] : b.shape()[0]) != call.k)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": inner dimensions differ: A ", a.shape().ToString(),
           (trans_a_ ? " (transposed)" : ""), ", B ", b.shape().ToString(), (trans_b_ ? " (transposed)" : ""));
    const launch::ElementType type = FloatElementType(ctx, a.type());
    const Shape y_shape{call.m, call.n};
    Tensor& y = ctx.Output(0, a.type(), y_shape);
    if (y.NumElements() == 0) return;
    const bool add_c = c != nullptr && beta_ != 0.0f && c->NumElements() > 0;
    if (add_c) {
      cpu::CheckUnidirectionalBroadcast(ctx.node(), c->shape(), y_shape, "C");
      const launch::BroadcastIndex index = MakeBroadcastIndex(ctx, y_shape, c->shape(), Shape{});
      CheckLaunch(ctx, launch::BroadcastTo(type, c->raw_data(), y.raw_data(), y.NumElements(), index, StreamOf(ctx)),
                  "broadcast of C");
    }
    call.a = a.raw_data();
    call.b = b.raw_data();
    call.out = y.raw_data();
    call.alpha = alpha_;
    call.beta = add_c ? beta_ : 0.0f;
    if (call.k == 0 && !add_c) {
      CheckCuda(cudaMemsetAsync(y.raw_data(), 0, y.SizeInBytes(), StreamOf(ctx)), ctx.node().Describe(), ": memset");
      return;
    }
    RowMajorGemm(ctx, ep_, a.type(), call);
  }

 private:
  const CudaExecutionProvider& ep_;
  float alpha_, beta_;
  bool trans_a_, trans_b_;
};

// numpy.matmul: 1-D operands are promoted to matrices (and the added dimension dropped from the
// result); batch dimensions broadcast.
class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    if (a.shape().rank() == 0 || b.shape().rank() == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": MatMul inputs must not be scalars");
    FloatElementType(ctx, a.type());
    std::vector<int64_t> a_dims = a.shape().dims(), b_dims = b.shape().dims();
    const bool a_vector = a_dims.size() == 1, b_vector = b_dims.size() == 1;
    if (a_vector) a_dims.insert(a_dims.begin(), 1);
    if (b_vector) b_dims.push_back(1);
    GemmCall call;
    call.m = a_dims[a_dims.size() - 2];
    call.k = a_dims.back();
    call.n = b_dims.back();
    if (b_dims[b_dims.size() - 2] != call.k)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": inner dimensions differ: A ", a.shape().ToString(),
           ", B ", b.shape().ToString());
    const Shape a_batch(std::vector<int64_t>(a_dims.begin(), a_dims.end() - 2));
    const Shape b_batch(std::vector<int64_t>(b_dims.begin(), b_dims.end() - 2));
    const Shape batch = cpu::BroadcastShapes(ctx.node(), a_batch, b_batch);
    std::vector<int64_t> y_dims = batch.dims();
    if (!a_vector) y_dims.push_back(call.m);
    if (!b_vector) y_dims.push_back(call.n);
    Tensor& y = ctx.Output(0, a.type(), Shape(y_dims));
    if (y.NumElements() == 0) return;
    if (call.k == 0) {
      CheckCuda(cudaMemsetAsync(y.raw_data(), 0, y.SizeInBytes(), StreamOf(ctx)), ctx.node().Describe(), ": memset");
      return;
    }
    call.a = a.raw_data();
    call.b = b.raw_data();
    call.out = y.raw_data();
    Multiply(ctx, a.type(), call, a_batch, b_batch, batch);
  }

 private:
  void Multiply(const KernelContext& ctx, DataType type, GemmCall call, const Shape& a_batch, const Shape& b_batch,
                const Shape& batch) const {
    const int64_t batches = batch.NumElements();
    const int64_t a_count = a_batch.NumElements(), b_count = b_batch.NumElements();
    const int64_t a_matrix = call.m * call.k, b_matrix = call.k * call.n, out_matrix = call.m * call.n;
    if (b_count == 1 && a_count == batches) {  // one B for every A: a single taller product
      call.m *= batches;
      RowMajorGemm(ctx, ep_, type, call);
      return;
    }
    // An operand holding every batch entry is indexed by the entry itself (broadcasting only added unit
    // dimensions); one holding a single matrix is shared. Either way a fixed stride reaches it.
    const bool a_linear = a_count == batches || a_count == 1;
    const bool b_linear = b_count == batches || b_count == 1;
    if (a_linear && b_linear) {
      call.batch = batches;
      call.stride_a = a_count == 1 ? 0 : a_matrix;
      call.stride_b = b_count == 1 ? 0 : b_matrix;
      call.stride_out = out_matrix;
      RowMajorGemm(ctx, ep_, type, call);
      return;
    }
    // General broadcasting: one product per batch entry.
    const launch::BroadcastIndex index = MakeBroadcastIndex(ctx, batch, a_batch, b_batch);
    const size_t element = SizeOf(type);
    for (int64_t i = 0; i < batches; ++i) {
      int64_t rest = i, a_offset = 0, b_offset = 0;
      for (int d = index.rank - 1; d >= 0; --d) {
        const int64_t coordinate = rest % index.out_dims[d];
        rest /= index.out_dims[d];
        a_offset += coordinate * index.a_strides[d];
        b_offset += coordinate * index.b_strides[d];
      }
      GemmCall one = call;
      one.a = static_cast<const char*>(call.a) + a_offset * a_matrix * element;
      one.b = static_cast<const char*>(call.b) + b_offset * b_matrix * element;
      one.out = static_cast<char*>(call.out) + i * out_matrix * element;
      RowMajorGemm(ctx, ep_, type, one);
    }
  }

  const CudaExecutionProvider& ep_;
};

}  // namespace

void RegisterGemmKernels(KernelRegistry& registry) {
  registry.Register<GemmKernel>(MakeDef("Gemm", 7, INT_MAX, FloatTypes()));
  registry.Register<MatMulKernel>(MakeDef("MatMul", 1, INT_MAX, FloatTypes()));
}

}  // namespace tessera::cuda
