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
#include <climits>
#include <string>

#include "providers/cpu/common/broadcast.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "providers/cuda/step_graphs.h"
#include "providers/cuda/kernels/skip_layer_norm.h"

namespace tessera::cuda {

namespace {

bool NamesOutput(const Node& node, size_t i) { return i < node.outputs.size() && !node.outputs[i].empty(); }

class SkipLayerNormKernel : public Kernel {
 public:
  explicit SkipLayerNormKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        epsilon_(info.node().GetFloat("epsilon", 1e-12f)),
        strict_(ep_.options().enable_skip_layer_norm_strict_mode),
        constant_parameters_(info.ConstantInput(2) != nullptr &&
                             (info.node().inputs.size() <= 3 || info.node().inputs[3].empty() ||
                              info.ConstantInput(3) != nullptr) &&
                             (info.node().inputs.size() <= 4 || info.node().inputs[4].empty() ||
                              info.ConstantInput(4) != nullptr)) {
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
    CheckParameter(ctx, skip, "skip", -1);
    CheckParameter(ctx, ctx.Input(2), "gamma", hidden);
    if (beta != nullptr) CheckParameter(ctx, *beta, "beta", hidden);
    if (bias != nullptr) CheckParameter(ctx, *bias, "bias", hidden);
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
    if (args.rows > INT_MAX)
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": ", args.rows, " rows exceed the CUDA grid");
    // One launch, replayed from a step graph in eager sessions: it depends on the operands' addresses and shapes
    // and the node's attributes only.
    const cudaStream_t stream = StreamOf(ctx);
    StepKey key(stream);
    key.Add(args.input).Add(args.skip).Add(args.gamma).Add(args.beta).Add(args.bias).Add(args.output).Add(args.sum);
    key.AddShape(input.shape()).AddShape(skip.shape()).Add(static_cast<uint64_t>(input.type()));
    steps_.Run(ctx, ep_, nullptr, key, StepLibrary::kNone, [&](cudaStream_t on, const LibraryHandles::Lease*) {
      CheckLaunch(ctx, launch::SkipLayerNorm(args, on), "SkipLayerNormalization launch");
    });
  }

 private:
  // Same type as input and, when `length` >= 0, that many values.
  static void CheckParameter(const KernelContext& ctx, const Tensor& t, const char* what, int64_t length) {
    const DataType type = ctx.Input(0).type();
    if (t.type() != type || (length >= 0 && t.NumElements() != length))
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": ", what, " is ", t.Describe(), ", expected ",
           DataTypeName(type), length >= 0 ? " with one value per feature (" + std::to_string(length) + ")" : "");
  }

  const CudaExecutionProvider& ep_;
  float epsilon_;
  bool strict_;
  bool constant_parameters_;  // gamma, beta and bias are initializers
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
}

}  // namespace tessera::cuda
