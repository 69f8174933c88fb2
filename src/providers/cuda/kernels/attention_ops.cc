// ai.tessera::Attention (graph/passes/attention_fusion): checks and geometry shared with the CPU kernel
// (providers/cpu/nn/attention_geometry), the fused device kernel in attention.cu.
#include "providers/cpu/nn/attention_geometry.h"
#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "providers/cuda/step_graphs.h"

namespace tessera::cuda {

namespace {

class AttentionKernel : public Kernel {
 public:
  explicit AttentionKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), attributes_(cpu::ReadAttentionAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& q = ctx.Input(0);
    const Tensor& k = ctx.Input(1);
    const Tensor& v = ctx.Input(2);
    const Tensor* mask = ctx.OptionalInput(3);
    const cpu::AttentionGeometry g = cpu::MakeAttentionGeometry(ctx.node(), attributes_, q, k, v, mask);
    Tensor& y = ctx.Output(0, q.type(), g.output_shape);
    if (y.NumElements() == 0) return;
    launch::AttentionArgs args;
    args.type = FloatElementType(ctx, q.type());
    args.q = q.raw_data();
    args.k = k.raw_data();
    args.v = v.raw_data();
    args.mask = mask != nullptr ? mask->raw_data() : nullptr;
    args.bool_mask = g.bool_mask;
    args.out = y.raw_data();
    args.batch = g.batch;
    args.heads = g.heads;
    args.q_len = g.q_len;
    args.k_len = g.k_len;
    args.head_size = g.head_size;
    args.v_head_size = g.v_head_size;
    for (int i = 0; i < 4; ++i) {
      args.q_strides[i] = g.q[i];
      args.k_strides[i] = g.k[i];
      args.v_strides[i] = g.v[i];
      args.out_strides[i] = g.out[i];
      args.mask_strides[i] = g.mask[i];
    }
    args.scale = attributes_.scale;
    args.masked_rows_zero = attributes_.masked_rows_zero;
    // One launch, replayed from a step graph in eager sessions (1-3 us of host time instead of ~4): the launch
    // depends on the operands' addresses and shapes and the node's attributes only.
    const cudaStream_t stream = StreamOf(ctx);
    StepKey key(stream);
    key.Add(args.q).Add(args.k).Add(args.v).Add(args.mask).Add(args.out).Add(static_cast<uint64_t>(q.type()));
    key.AddShape(q.shape()).AddShape(k.shape()).AddShape(v.shape()).AddShape(mask != nullptr ? mask->shape() : Shape{});
    steps_.Run(ctx, ep_, nullptr, key, StepLibrary::kNone, [&](cudaStream_t on, const LibraryHandles::Lease*) {
      const cudaError_t status = launch::Attention(args, on);
      if (status == cudaErrorInvalidConfiguration)
        Fail(ErrorCode::kNotImplemented, ctx.node(), ": head size ", g.head_size, " with ", g.batch * g.heads,
             " batch x heads and ", g.q_len, " queries does not fit the fused kernel's blocks");
      CheckLaunch(ctx, status, "Attention launch");
    });
  }

 private:
  const CudaExecutionProvider& ep_;
  cpu::AttentionAttributes attributes_;
  StepGraphs steps_;
};

}  // namespace

void RegisterAttentionKernels(KernelRegistry& registry) {
  registry.Register<AttentionKernel>(cpu::AttentionKernelDef());
}

}  // namespace tessera::cuda
