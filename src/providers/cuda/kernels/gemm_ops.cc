// Gemm and MatMul through cuBLAS (float32 with TF32 per use_tf32, float16 accumulating in float32).
//
// Tessera tensors are row-major and cuBLAS is column-major: a row-major product out = a * b is computed
// as the column-major product out^T = b^T * a^T, which reads the same memory without any transpose.
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "providers/cpu/common/broadcast.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "providers/cuda/kernels/lt_matmul.h"

namespace tessera::cuda {

namespace {

int CheckedInt(const KernelContext& ctx, int64_t value) {
  if (value > INT_MAX)
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": dimension ", value, " exceeds cuBLAS's 32-bit sizes");
  return static_cast<int>(value);
}

// The product through cuBLAS's strided-batched GEMM: out = alpha * op(a) x op(b) + beta * out. Neither c (other
// than out itself) nor an epilogue.
void CublasProduct(const KernelContext& ctx, const CudaExecutionProvider& ep, const RowMajorProduct& c) {
  const bool half = c.type == DataType::kFloat16;
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
              ctx.node(), ": cublasGemmStridedBatchedEx");
}

// out = alpha * op(a) x op(b) + beta * out through cuBLASLt's cached plan when it has one, else cuBLAS.
void PlainProduct(const KernelContext& ctx, const CudaExecutionProvider& ep, const LtMatmulPlans& plans,
                  RowMajorProduct product) {
  product.c = product.beta != 0.0f ? product.out : nullptr;
  product.epilogue = LtEpilogue::kNone;
  product.bias = nullptr;
  if (!plans.Run(ctx, ep, product)) CublasProduct(ctx, ep, product);
}

// Whether C of a Gemm is a bias: one value per output column ([N] or [1, N]).
bool IsColumnBias(const Tensor& c, int64_t n) {
  const Shape& shape = c.shape();
  return (shape.rank() == 1 && shape[0] == n) || (shape.rank() == 2 && shape[0] == 1 && shape[1] == n);
}

// A constant B kept transposed on the device ([n, k] row-major) for launch::SmallRowsProduct, which computes products
// of up to kSmallProductRows rows (a decoding step's) at the memory's bandwidth where cuBLAS's tiled kernels do not.
// Only 2-D float / float16 initializers whose k suits the kernel's 16-byte loads qualify. The copy is made on the
// device from the session's device-resident B by the first product of few rows (not at session creation, where it
// would cost every model a host-side transpose and a second upload of its weights whether or not it ever meets
// such a product); a B that is already [n, k] (Gemm's transB) is used as is. A run being captured into a CUDA graph
// never makes the copy (no allocation or synchronization inside a capture): it takes cuBLAS until an uncaptured run
// has made it, which warm-up runs do.
class SmallRowsWeights {
 public:
  SmallRowsWeights(const KernelInfo& info, bool b_transposed) : b_transposed_(b_transposed) {
    if (!b_transposed) allocator_ = CudaEpOf(info).allocator(MemoryType::kDefault);
    const Tensor* b = info.ConstantInput(1);
    if (b == nullptr || b->shape().rank() != 2 || (b->type() != DataType::kFloat && b->type() != DataType::kFloat16))
      return;
    const int64_t k = b_transposed ? b->shape()[1] : b->shape()[0];
    const int64_t per_word = 16 / static_cast<int64_t>(SizeOf(b->type()));
    eligible_ = k > 0 && k % per_word == 0 && b->shape()[0] > 0 && b->shape()[1] > 0;
  }

  // The [n, k] weights when SmallRowsProduct takes a product of `rows` rows of `a` with `b` (input 1), else nullptr.
  const void* For(const KernelContext& ctx, const Tensor& b, int64_t rows, const void* a) const {
    if (!eligible_ || rows < 1 || rows > launch::kSmallProductRows || reinterpret_cast<uintptr_t>(a) % 16 != 0 ||
        b.memory_info().IsHostReadable())
      return nullptr;
    if (b_transposed_) return reinterpret_cast<uintptr_t>(b.raw_data()) % 16 == 0 ? b.raw_data() : nullptr;
    if (ready_.load(std::memory_order_acquire)) return copy_.raw_data();
    cudaStream_t stream = StreamOf(ctx);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CheckCuda(cudaStreamIsCapturing(stream, &capture), ctx.node(), ": cudaStreamIsCapturing");
    if (capture != cudaStreamCaptureStatusNone) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ready_.load(std::memory_order_relaxed)) {
      const int64_t k = b.shape()[0];
      const int64_t n = b.shape()[1];
      Tensor copy = Tensor::Allocate(b.type(), Shape{n, k}, allocator_);
      const int64_t dims[2] = {n, k};
      const int64_t strides[2] = {1, n};
      CheckCuda(launch::Transpose(static_cast<int>(SizeOf(b.type())), b.raw_data(), copy.raw_data(), 2, dims, strides,
                                  n * k, stream),
                ctx.node(), ": transposing the weights");
      // Other threads may use the copy on other streams as soon as ready_ is set.
      CheckCuda(cudaStreamSynchronize(stream), ctx.node(), ": transposing the weights");
      copy_ = std::move(copy);
      ready_.store(true, std::memory_order_release);
    }
    return copy_.raw_data();
  }

 private:
  bool b_transposed_ = false;
  bool eligible_ = false;
  AllocatorPtr allocator_;  // the EP's device memory, for the copy
  mutable std::mutex mutex_;
  mutable std::atomic<bool> ready_{false};
  mutable Tensor copy_;
};

class GemmKernel : public Kernel {
 public:
  explicit GemmKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        alpha_(info.node().GetFloat("alpha", 1.0f)),
        beta_(info.node().GetFloat("beta", 1.0f)),
        trans_a_(info.node().GetInt("transA", 0) != 0),
        trans_b_(info.node().GetInt("transB", 0) != 0),
        small_rows_(info, trans_b_) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    const Tensor* c = ctx.OptionalInput(2);
    if (a.shape().rank() != 2 || b.shape().rank() != 2)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": A ", a.shape().ToString(), " and B ",
           b.shape().ToString(), " must be matrices");
    RowMajorProduct call;
    call.type = a.type();
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
      if (c->type() != a.type())
        Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": C is ", c->Describe(), ", A is ", a.Describe());
      cpu::CheckUnidirectionalBroadcast(ctx.node(), c->shape(), y_shape, "C");
    }
    call.a = a.raw_data();
    call.b = b.raw_data();
    call.out = y.raw_data();
    call.alpha = alpha_;
    // A few rows against constant weights, with at most a bias: one warp per output column.
    const bool bias_only = !add_c || (beta_ == 1.0f && IsColumnBias(*c, call.n));
    const void* wt = !trans_a_ && bias_only && call.k > 0 ? small_rows_.For(ctx, b, call.m, call.a) : nullptr;
    if (wt != nullptr) {
      CheckLaunch(ctx,
                  launch::SmallRowsProduct(type, call.a, wt, call.out, static_cast<int>(call.m),
                                           call.n, call.k, alpha_, add_c ? c->raw_data() : nullptr,
                                           launch::EpilogueActivation{}, nullptr, StreamOf(ctx)),
                  "small-rows product launch");
      return;
    }
    // One cuBLASLt call when C is a bias of the columns (beta 1: the bias epilogue) or has Y's shape.
    if (call.k > 0) {
      RowMajorProduct fused = call;
      bool fusable = true;
      if (add_c && beta_ == 1.0f && IsColumnBias(*c, call.n)) {
        fused.epilogue = LtEpilogue::kBias;
        fused.bias = c->raw_data();
      } else if (add_c && c->shape() == y_shape) {
        fused.c = c->raw_data();
        fused.beta = beta_;
      } else {
        fusable = !add_c;
      }
      if (fusable && plans_.Run(ctx, ep_, fused)) return;
    }
    // Otherwise C is broadcast into Y first and accumulated into by the product.
    if (add_c) {
      const launch::BroadcastIndex index = MakeBroadcastIndex(ctx, y_shape, c->shape(), Shape{});
      CheckLaunch(ctx, launch::BroadcastTo(type, c->raw_data(), y.raw_data(), y.NumElements(), index, StreamOf(ctx)),
                  "broadcast of C");
    }
    call.beta = add_c ? beta_ : 0.0f;
    if (call.k == 0 && !add_c) {
      CheckCuda(cudaMemsetAsync(y.raw_data(), 0, y.SizeInBytes(), StreamOf(ctx)), ctx.node(), ": memset");
      return;
    }
    PlainProduct(ctx, ep_, plans_, call);
  }

 private:
  const CudaExecutionProvider& ep_;
  float alpha_, beta_;
  bool trans_a_, trans_b_;
  SmallRowsWeights small_rows_;
  LtMatmulPlans plans_;
};

// numpy.matmul: 1-D operands are promoted to matrices (and the added dimension dropped from the
// result); batch dimensions broadcast. Also ai.tessera::FusedMatMul(A, B, bias?, addend?) with attributes
// alpha, activation, activation_params (graph/passes/matmul_epilogue_fusion.h):
//   Y = activation(alpha * (A x B) + bias) + addend
// alpha goes into the product's call. cuBLASLt's epilogue takes the bias and a ReLU, and an addend of the product's
// shape when there is no activation; whatever it cannot take (other activations, an addend after an activation or
// broadcasting to the product) goes into one epilogue kernel over Y. An addend that widens the product (broadcasts
// to a larger shape) is added by the broadcasting Add from a temporary.
class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        fused_(info.node().op_type == "FusedMatMul"),
        alpha_(fused_ ? info.node().GetFloat("alpha", 1.0f) : 1.0f),
        activation_(fused_ ? ToLaunchActivation(ReadFusedActivation(info.node())) : launch::EpilogueActivation{}),
        small_rows_(info, false) {}

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
    RowMajorProduct call;
    call.type = a.type();
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
    const Shape product_shape(y_dims);
    const Tensor* bias = fused_ ? ctx.OptionalInput(2) : nullptr;
    const Tensor* addend = fused_ ? ctx.OptionalInput(3) : nullptr;
    CheckEpilogueOperands(ctx, a.type(), bias, addend, call.n);
    const Shape y_shape = addend != nullptr ? cpu::BroadcastShapes(ctx.node(), product_shape, addend->shape())
                                            : product_shape;
    Tensor& y = ctx.Output(0, a.type(), y_shape);
    if (y.NumElements() == 0) return;
    const bool widening = y_shape != product_shape;
    Tensor product = widening ? Tensor::Allocate(a.type(), product_shape, ctx.allocator()) : Tensor();
    Tensor& target = widening ? product : y;
    Epilogue rest{bias, activation_, widening ? nullptr : addend};
    if (call.k == 0) {
      CheckCuda(cudaMemsetAsync(target.raw_data(), 0, target.SizeInBytes(), StreamOf(ctx)), ctx.node(),
                ": memset");
    } else {
      call.a = a.raw_data();
      call.b = b.raw_data();
      call.out = target.raw_data();
      call.alpha = alpha_;
      const bool batched = Batch(call, a_batch, b_batch, batch);
      const void* wt = batched && call.batch == 1 && !widening && (addend == nullptr || addend->shape() == product_shape)
                           ? small_rows_.For(ctx, b, call.m, call.a)
                           : nullptr;
      if (wt != nullptr) {
        // A few rows against constant weights: the product and the whole epilogue in one kernel.
        CheckLaunch(ctx,
                    launch::SmallRowsProduct(FloatElementType(ctx, a.type()), call.a, wt, call.out,
                                             static_cast<int>(call.m), call.n, call.k, alpha_,
                                             bias != nullptr ? bias->raw_data() : nullptr, activation_,
                                             addend != nullptr ? addend->raw_data() : nullptr, StreamOf(ctx)),
                    "small-rows product launch");
        return;
      }
      if (!batched) {
        MultiplyEach(ctx, call, a_batch, b_batch, batch);
      } else {
        RowMajorProduct fused = call;
        const Epilogue fused_rest = FuseIntoProduct(fused, rest, product_shape);
        if (plans_.Run(ctx, ep_, fused))
          rest = fused_rest;
        else
          CublasProduct(ctx, ep_, call);
      }
    }
    ApplyEpilogue(ctx, target, call.n, rest, widening ? &y : nullptr, addend);
  }

 private:
  // What of bias, activation and addend is still to be applied to the product.
  struct Epilogue {
    const Tensor* bias = nullptr;
    launch::EpilogueActivation activation;
    const Tensor* addend = nullptr;  // with the product's shape or broadcasting to it
  };

  // Moves into `product` what cuBLASLt fuses into the product's kernel (bias, ReLU, and an addend of the
  // product's shape when there is no activation: Y = alpha * A x B + addend + bias) and returns what is left.
  static Epilogue FuseIntoProduct(RowMajorProduct& product, Epilogue rest, const Shape& product_shape) {
    using Kind = launch::EpilogueActivation::Kind;
    const Kind kind = rest.activation.kind;
    if (kind != Kind::kNone && kind != Kind::kRelu) return rest;
    if (rest.bias != nullptr) {
      product.epilogue = kind == Kind::kRelu ? LtEpilogue::kReluBias : LtEpilogue::kBias;
      product.bias = rest.bias->raw_data();
      rest.bias = nullptr;
    } else if (kind == Kind::kRelu) {
      product.epilogue = LtEpilogue::kRelu;
    }
    rest.activation = {};
    if (kind == Kind::kNone && rest.addend != nullptr && rest.addend->shape() == product_shape) {
      product.c = rest.addend->raw_data();
      product.beta = 1.0f;
      rest.addend = nullptr;
    }
    return rest;
  }

  static void CheckEpilogueOperands(const KernelContext& ctx, DataType type, const Tensor* bias, const Tensor* addend,
                                    int64_t columns) {
    if ((bias != nullptr && bias->type() != type) || (addend != nullptr && addend->type() != type))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": A, bias and addend must have one element type");
    if (bias != nullptr && (bias->shape().rank() != 1 || bias->shape()[0] != columns))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": bias ", bias->shape().ToString(),
           " must be 1-D with N = ", columns, " values");
  }

  // product = activation(product + bias) + addend for what `rest` holds; then, with `widened` set,
  // widened = product + widening_addend, broadcasting both.
  void ApplyEpilogue(const KernelContext& ctx, Tensor& product, int64_t columns, const Epilogue& rest,
                     Tensor* widened, const Tensor* widening_addend) const {
    const launch::ElementType type = FloatElementType(ctx, product.type());
    const cudaStream_t stream = StreamOf(ctx);
    const Tensor* addend = rest.addend;
    const bool any = rest.bias != nullptr || addend != nullptr ||
                     rest.activation.kind != launch::EpilogueActivation::Kind::kNone;
    if (any) {
      const bool same_shape = addend == nullptr || addend->shape() == product.shape();
      const launch::BroadcastIndex index =
          same_shape ? launch::BroadcastIndex{}
                     : MakeBroadcastIndex(ctx, product.shape(), product.shape(), addend->shape());
      CheckLaunch(ctx,
                  launch::MatMulEpilogue(type, product.raw_data(), product.NumElements(), columns,
                                         rest.bias != nullptr ? rest.bias->raw_data() : nullptr, rest.activation,
                                         addend != nullptr ? addend->raw_data() : nullptr,
                                         same_shape ? nullptr : &index, stream),
                  "epilogue launch");
    }
    if (widened == nullptr) return;
    const launch::BroadcastIndex index =
        MakeBroadcastIndex(ctx, widened->shape(), product.shape(), widening_addend->shape());
    CheckLaunch(ctx,
                launch::Binary(launch::BinaryOp::kAdd, type, product.raw_data(), widening_addend->raw_data(),
                               widened->raw_data(), widened->NumElements(), &index, stream),
                "addend launch");
  }

  // Folds the batch dimensions into `call` (a taller product, or fixed strides between batch entries) and
  // returns true; false when the batch needs one product per entry (general broadcasting).
  static bool Batch(RowMajorProduct& call, const Shape& a_batch, const Shape& b_batch, const Shape& batch) {
    const int64_t batches = batch.NumElements();
    const int64_t a_count = a_batch.NumElements(), b_count = b_batch.NumElements();
    if (b_count == 1 && a_count == batches) {  // one B for every A: a single taller product
      call.m *= batches;
      return true;
    }
    // An operand holding every batch entry is indexed by the entry itself (broadcasting only added unit
    // dimensions); one holding a single matrix is shared. Either way a fixed stride reaches it.
    const bool a_linear = a_count == batches || a_count == 1;
    const bool b_linear = b_count == batches || b_count == 1;
    if (!a_linear || !b_linear) return false;
    call.batch = batches;
    call.stride_a = a_count == 1 ? 0 : call.m * call.k;
    call.stride_b = b_count == 1 ? 0 : call.k * call.n;
    call.stride_out = call.m * call.n;
    return true;
  }

  // General broadcasting: one product per batch entry.
  void MultiplyEach(const KernelContext& ctx, const RowMajorProduct& call, const Shape& a_batch, const Shape& b_batch,
                    const Shape& batch) const {
    const int64_t batches = batch.NumElements();
    const int64_t a_matrix = call.m * call.k, b_matrix = call.k * call.n, out_matrix = call.m * call.n;
    const launch::BroadcastIndex index = MakeBroadcastIndex(ctx, batch, a_batch, b_batch);
    const size_t element = SizeOf(call.type);
    for (int64_t i = 0; i < batches; ++i) {
      int64_t rest = i, a_offset = 0, b_offset = 0;
      for (int d = index.rank - 1; d >= 0; --d) {
        const int64_t coordinate = rest % index.out_dims[d];
        rest /= index.out_dims[d];
        a_offset += coordinate * index.a_strides[d];
        b_offset += coordinate * index.b_strides[d];
      }
      RowMajorProduct one = call;
      one.a = static_cast<const char*>(call.a) + a_offset * a_matrix * element;
      one.b = static_cast<const char*>(call.b) + b_offset * b_matrix * element;
      one.out = static_cast<char*>(call.out) + i * out_matrix * element;
      PlainProduct(ctx, ep_, plans_, one);
    }
  }

  const CudaExecutionProvider& ep_;
  bool fused_;                             // ai.tessera::FusedMatMul
  float alpha_;                            // FusedMatMul's scale of the product
  launch::EpilogueActivation activation_;  // FusedMatMul's activation (none for MatMul)
  SmallRowsWeights small_rows_;
  LtMatmulPlans plans_;
};

}  // namespace

void RegisterGemmKernels(KernelRegistry& registry) {
  registry.Register<GemmKernel>(MakeDef("Gemm", 7, INT_MAX, FloatTypes()));
  registry.Register<MatMulKernel>(MakeDef("MatMul", 1, INT_MAX, FloatTypes()));
  KernelDef fused = MakeDef("FusedMatMul", 1, INT_MAX, FloatTypes());
  fused.domain = "ai.tessera";
  registry.Register<MatMulKernel>(std::move(fused));
}

}  // namespace tessera::cuda
