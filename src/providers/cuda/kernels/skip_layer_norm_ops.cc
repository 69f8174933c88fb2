// SkipLayerNormalization (opset 1) in domains ai.tessera (graph/passes/skip_layer_norm_fusion) and
// com.microsoft: the semantics of the CPU kernel (providers/cpu/nn/skip_layer_norm.cc): inputs (input, skip,
// gamma, beta?, bias?), outputs (output, -, -, input_skip_bias_sum?), input and skip broadcasting against
// each other, gamma/beta/bias one value per feature, all float32 or all float16.
//
// The provider option `enable_skip_layer_norm_strict_mode` picks the float16 arithmetic:
//   strict (1)   each addition is rounded to float16 as the unfused Add stores it, and the statistics are
//                LayerNormalization's (same reduction order): the result is the unfused graph's, bit for bit;
//   default (0)  the sum stays in float32 registers until it is written (one rounding fewer per addition):
//                slightly more accurate, and it can differ from the unfused graph in the last float16 bits.
// float32 results are the same in both modes.
//
// ai.tessera::MatMulSkipLayerNormalization (graph/passes/matmul_skip_layer_norm_fusion): the same with its input the
// product A x B of a constant 2-D B. Where the product's output tiles alone would leave most of the GPU idle (a
// transformer's FFN output, [128, 3072] x [3072, 768]: 24 tiles of 64 x 64), its depth is split into chunks
// computed as strided batches of one cuBLASLt product writing float32 partial sums, which the SkipLayerNormalization
// kernel adds up itself -- instead of cuBLASLt's split-K kernel and its reduction kernel. Otherwise (and in strict
// mode, or where skip broadcasts) the product goes into a temporary of the input type and the kernel above runs.
#include <algorithm>
#include <climits>
#include <string>

#include "providers/cpu/common/broadcast.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "providers/cuda/kernels/lt_matmul.h"
#include "providers/cuda/step_graphs.h"
#include "providers/cuda/kernels/skip_layer_norm.h"
#include "tessera/ep/matmul_skip_layer_norm_geometry.h"

namespace tessera::cuda {

namespace {

bool NamesOutput(const Node& node, size_t i) { return i < node.outputs.size() && !node.outputs[i].empty(); }

// Same type as `type` and, when `length` >= 0, that many values.
void CheckParameter(const KernelContext& ctx, const Tensor& t, DataType type, const char* what, int64_t length) {
  if (t.type() != type || (length >= 0 && t.NumElements() != length))
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", what, " is ", t.Describe(), ", expected ",
         DataTypeName(type), length >= 0 ? " with one value per feature (" + std::to_string(length) + ")" : "");
}

// Whether gamma, beta and bias (inputs first, first + 1, first + 2; the last two optional) are initializers.
bool ConstantParameters(const KernelInfo& info, size_t first) {
  const auto constant_or_absent = [&](size_t i) {
    return info.node().inputs.size() <= i || info.node().inputs[i].empty() || info.ConstantInput(i) != nullptr;
  };
  return info.ConstantInput(first) != nullptr && constant_or_absent(first + 1) && constant_or_absent(first + 2);
}

// Queues `args` (one launch, replayed from a step graph in eager sessions: it depends on the operands' addresses and
// shapes and the node's attributes only).
void QueueSkipLayerNorm(KernelContext& ctx, const CudaExecutionProvider& ep, const StepGraphs& steps,
                        const launch::SkipLayerNormArgs& args, const Shape& input_shape, const Shape& skip_shape) {
  if (args.rows > INT_MAX)
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": ", args.rows, " rows exceed the CUDA grid");
  const cudaStream_t stream = StreamOf(ctx);
  StepKey key(stream);
  key.Add(args.input).Add(args.skip).Add(args.gamma).Add(args.beta).Add(args.bias).Add(args.output).Add(args.sum);
  key.Add(args.partials).Add(static_cast<uint64_t>(args.partial_count)).Add(static_cast<uint64_t>(args.type));
  key.AddShape(input_shape).AddShape(skip_shape);
  steps.Run(ctx, ep, nullptr, key, StepLibrary::kNone, [&](cudaStream_t on, const LibraryHandles::Lease*) {
    CheckLaunch(ctx, launch::SkipLayerNorm(args, on), "SkipLayerNormalization launch");
  });
}

class SkipLayerNormKernel : public Kernel {
 public:
  explicit SkipLayerNormKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        epsilon_(info.node().GetFloat("epsilon", 1e-12f)),
        strict_(ep_.options().enable_skip_layer_norm_strict_mode),
        constant_parameters_(ConstantParameters(info, 2)) {
    if (NamesOutput(info.node(), 1) || NamesOutput(info.node(), 2))
      Fail(ErrorCode::kNotImplemented, info.node().Describe(),
           ": the mean and inv_std_var outputs (1, 2) are not produced; only output and input_skip_bias_sum");
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& input = ctx.Input(0);
    const Tensor& skip = ctx.Input(1);
    const Tensor* beta = ctx.OptionalInput(3);
    const Tensor* bias = ctx.OptionalInput(4);
    std::vector<Shape> shapes = {input.shape(), skip.shape()};
    if (bias != nullptr) shapes.push_back(Shape{bias->NumElements()});
    const Shape out = cpu::BroadcastShapes(ctx.node(), shapes);
    if (out.rank() == 0)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input and skip are scalars; need a hidden axis");
    const int64_t hidden = out[out.rank() - 1];
    CheckParameter(ctx, skip, input.type(), "skip", -1);
    CheckParameter(ctx, ctx.Input(2), input.type(), "gamma", hidden);
    if (beta != nullptr) CheckParameter(ctx, *beta, input.type(), "beta", hidden);
    if (bias != nullptr) CheckParameter(ctx, *bias, input.type(), "bias", hidden);
    Tensor& y = ctx.Output(0, input.type(), out);
    Tensor* sum = NamesOutput(ctx.node(), 3) ? &ctx.Output(3, input.type(), out) : nullptr;
    if (out.NumElements() == 0) return;
    const bool broadcast = input.shape() != out || skip.shape() != out;
    const launch::BroadcastIndex index =
        broadcast ? MakeBroadcastIndex(ctx, out, input.shape(), skip.shape()) : launch::BroadcastIndex{};
    launch::SkipLayerNormArgs args;
    args.type = FloatElementType(ctx, input.type());
    args.input = input.raw_data();
    args.skip = skip.raw_data();
    args.gamma = ctx.Input(2).raw_data();
    args.beta = beta != nullptr ? beta->raw_data() : nullptr;
    args.bias = bias != nullptr ? bias->raw_data() : nullptr;
    args.output = y.raw_data();
    args.sum = sum != nullptr ? sum->raw_data() : nullptr;
    args.rows = out.NumElements() / hidden;
    args.hidden = hidden;
    args.epsilon = epsilon_;
    args.index = broadcast ? &index : nullptr;
    args.strict = strict_;
    args.constant_parameters = constant_parameters_;
    QueueSkipLayerNorm(ctx, ep_, steps_, args, input.shape(), skip.shape());
  }

 private:
  const CudaExecutionProvider& ep_;
  float epsilon_;
  bool strict_;
  bool constant_parameters_;  // gamma, beta and bias are initializers
  StepGraphs steps_;
};

// Depth chunks for a product of `rows` x `n` outputs over depth `k`: doubled while cuBLASLt's 64 x 64 output tiles
// times the chunks stay under 96 (most of an H100's / H200's 132 multiprocessors idle), up to 4 chunks of at least
// 192 (a whole number of 16-byte words of float16 each); 1: no split. Measured on an H200
// (bench/cuda/split_k_products.cu): [128, 3072] x [3072, 768] float16 as one product (cuBLASLt's split-K and
// reduction kernels) 6.4 us + the normalization 2.2, as 4 float32 partials 3.9 + 2.6; TF32 9.7 against 8.6 + 0.4.
int64_t DepthChunks(int64_t rows, int64_t n, int64_t k) {
  const int64_t tiles = ((rows + 63) / 64) * ((n + 63) / 64);
  int64_t chunks = 1;
  while (chunks < 4 && tiles * chunks < 96) {
    const int64_t next = chunks * 2;
    if (k % next != 0 || k / next < 192 || (k / next) % 8 != 0) break;
    chunks = next;
  }
  return chunks;
}

// ai.tessera::MatMulSkipLayerNormalization (opset 1): inputs (A, B, skip, gamma, beta?, bias?), output Y =
// SkipLayerNormalization(A x B, skip, gamma, beta, bias) with A [..., K] and B [K, N].
class MatMulSkipLayerNormKernel : public Kernel {
 public:
  explicit MatMulSkipLayerNormKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        epsilon_(info.node().GetFloat("epsilon", 1e-12f)),
        strict_(ep_.options().enable_skip_layer_norm_strict_mode),
        constant_parameters_(ConstantParameters(info, 3)) {
    for (size_t i = 1; i < info.node().outputs.size(); ++i)
      if (NamesOutput(info.node(), i))
        Fail(ErrorCode::kNotImplemented, info.node().Describe(), ": only output 0 is produced");
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    const Tensor& skip = ctx.Input(2);
    const Tensor* beta = ctx.OptionalInput(4);
    const Tensor* bias = ctx.OptionalInput(5);
    const DataType type = a.type();
    const Shape out = MatMulSkipLayerNormOutput(ctx.node(), a, b, skip, ctx.Input(3), beta, bias);
    const int64_t k = b.shape()[0], n = b.shape()[1];
    Tensor& y = ctx.Output(0, type, out);
    if (out.NumElements() == 0) return;
    const int64_t rows = out.NumElements() / n;

    launch::SkipLayerNormArgs args;
    args.type = FloatElementType(ctx, type);
    args.skip = skip.raw_data();
    args.gamma = ctx.Input(3).raw_data();
    args.beta = beta != nullptr ? beta->raw_data() : nullptr;
    args.bias = bias != nullptr ? bias->raw_data() : nullptr;
    args.output = y.raw_data();
    args.rows = rows;
    args.hidden = n;
    args.epsilon = epsilon_;
    args.strict = strict_;
    args.constant_parameters = constant_parameters_;
    const bool broadcast = skip.shape() != out;
    const launch::BroadcastIndex index =
        broadcast ? MakeBroadcastIndex(ctx, out, out, skip.shape()) : launch::BroadcastIndex{};
    args.index = broadcast ? &index : nullptr;

    RowMajorProduct product;
    product.type = type;
    product.m = rows;
    product.n = n;
    product.a = a.raw_data();
    product.b = b.raw_data();
    // The depth in chunks, each a batch of the product with float32 sums, when the normalization can add them up.
    const int64_t chunks = DepthChunks(rows, n, k);
    Tensor partials;
    if (chunks > 1 && !broadcast && !strict_) {
      partials = Tensor::Allocate(DataType::kFloat, Shape{chunks, rows, n}, ctx.allocator());
      args.partials = static_cast<const float*>(partials.raw_data());
      args.partial_count = static_cast<int>(chunks);
      args.partial_stride = rows * n;
      product.float_out = true;
      product.k = k / chunks;
      product.lda = k;
      product.out = partials.raw_data();
      product.batch = chunks;
      product.stride_a = k / chunks;
      product.stride_b = (k / chunks) * n;
      product.stride_out = rows * n;
      if (launch::SkipLayerNormTakesPartials(args) && plans_.Run(ctx, ep_, product)) {
        QueueSkipLayerNorm(ctx, ep_, steps_, args, out, skip.shape());
        return;
      }
      args.partials = nullptr;
      args.partial_count = 0;
      args.partial_stride = 0;
    }
    // The product into a temporary of the input type, then the normalization as SkipLayerNormalization's.
    Tensor product_out = Tensor::Allocate(type, out, ctx.allocator());
    product = RowMajorProduct{};
    product.type = type;
    product.m = rows;
    product.n = n;
    product.k = k;
    product.a = a.raw_data();
    product.b = b.raw_data();
    product.out = product_out.raw_data();
    if (!plans_.Run(ctx, ep_, product))
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": cuBLASLt has no algorithm for the product ",
           a.Describe(), " x ", b.Describe());
    args.input = product_out.raw_data();
    QueueSkipLayerNorm(ctx, ep_, steps_, args, out, skip.shape());
  }

 private:
  const CudaExecutionProvider& ep_;
  float epsilon_;
  bool strict_;
  bool constant_parameters_;  // gamma, beta and bias are initializers
  LtMatmulPlans plans_;
  StepGraphs steps_;
};

KernelDef SkipLayerNormDef(const char* domain) {
  KernelDef def = MakeDef("SkipLayerNormalization", 1, INT_MAX, FloatTypes());
  def.domain = domain;
  return def;
}

}  // namespace

void RegisterSkipLayerNormKernels(KernelRegistry& registry) {
  registry.Register<SkipLayerNormKernel>(SkipLayerNormDef("ai.tessera"));
  registry.Register<SkipLayerNormKernel>(SkipLayerNormDef("com.microsoft"));
  KernelDef fused = MakeDef("MatMulSkipLayerNormalization", 1, INT_MAX, FloatTypes());
  fused.domain = "ai.tessera";
  registry.Register<MatMulSkipLayerNormKernel>(fused);
}

}  // namespace tessera::cuda
