// RotaryEmbedding, ai.onnx (opset 23) and com.microsoft: the EP SDK's checks and geometry
// (tessera/ep/rotary_geometry.h), the device kernel in rotary_embedding.cu. float32 and float16.
#include "tessera/ep/rotary_geometry.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

class RotaryEmbeddingKernel : public Kernel {
 public:
  explicit RotaryEmbeddingKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), attributes_(ReadRotaryAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const RotaryInputs in = RotaryInputIndices(attributes_);
    const Tensor& x = ctx.Input(0);
    const Tensor& cos = ctx.Input(in.cos);
    const Tensor& sin = ctx.Input(in.sin);
    const Tensor* positions = attributes_.contrib ? &ctx.Input(1) : ctx.OptionalInput(3);
    const RotaryGeometry g = MakeRotaryGeometry(ctx.node(), attributes_, x, cos, sin, positions);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (y.NumElements() == 0) return;
    launch::RotaryArgs args;
    args.type = FloatElementType(ctx, x.type());
    args.x = x.raw_data();
    args.cos = cos.raw_data();
    args.sin = sin.raw_data();
    args.positions = positions != nullptr ? positions->raw_data() : nullptr;
    args.int64_positions = positions == nullptr || positions->type() == DataType::kInt64;
    args.first_only = g.positions == RotaryPositions::kFirstOnly;
    args.interleaved = attributes_.interleaved;
    args.max_position = g.max_position;
    args.y = y.raw_data();
    args.batch = g.batch;
    args.heads = g.heads;
    args.seq = g.seq;
    args.head_size = g.head_size;
    args.rot = g.rot;
    args.batch_stride = g.batch_stride;
    args.head_stride = g.head_stride;
    args.token_stride = g.token_stride;
    CheckLaunch(ctx, launch::RotaryEmbedding(args, StreamOf(ctx)), "RotaryEmbedding launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  RotaryAttributes attributes_;
};

}  // namespace

void RegisterRotaryEmbeddingKernels(KernelRegistry& registry) {
  for (bool contrib : {false, true}) {
    KernelDef def = RotaryEmbeddingKernelDef(contrib);
    def.input_types[0] = FloatTypes();
    registry.Register<RotaryEmbeddingKernel>(std::move(def));
  }
}

}  // namespace tessera::cuda
