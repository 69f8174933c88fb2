// ai.onnx Attention (opsets 23+; Attention-24's input 6 is refused) on the fused attention kernel of ai.tessera::Attention (attention.h): checks and
// geometry shared with the CPU kernel (tessera/ep/onnx_attention_geometry.h). The present caches are written when a
// past is given or they are asked for (the attention then reads them); a causal flag, or a mask shorter than the
// keys, becomes one additive bias tensor; grouped-query heads run as one launch per query head of a group (query
// head g + G * kv reads key/value head kv). softcap and the qk_matmul_output output are not implemented here: such
// nodes stay on the CPU EP (NodeIsSupported). float32 and float16.
#include <climits>

#include "tessera/ep/onnx_attention_geometry.h"
#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/grouped_attention.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

void SetStrides(int64_t (&strides)[4], const HeadLayout& l) {
  strides[0] = l.batch_stride;
  strides[1] = l.head_stride;
  strides[2] = l.position_stride;
  strides[3] = 1;
}

bool Wanted(const Node& node, size_t output) { return node.outputs.size() > output && !node.outputs[output].empty(); }

class OnnxAttentionKernel : public Kernel {
 public:
  explicit OnnxAttentionKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), attributes_(ReadOnnxAttentionAttributes(info.node())) {
    if (attributes_.softcap != 0.0f || Wanted(info.node(), 3))
      Fail(ErrorCode::kNotImplemented, info.node(), ": softcap and qk_matmul_output run on the CPU EP only");
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Node& node = ctx.node();
    const Tensor &q = ctx.Input(0), &k = ctx.Input(1), &v = ctx.Input(2);
    const Tensor* mask = ctx.OptionalInput(3);
    const Tensor* past_k = ctx.OptionalInput(4);
    const Tensor* past_v = ctx.OptionalInput(5);
    const OnnxAttentionGeometry g = MakeOnnxAttentionGeometry(node, attributes_, q, k, v, mask, past_k, past_v);
    const launch::ElementType type = FloatElementType(ctx, q.type());
    const cudaStream_t stream = StreamOf(ctx);
    Tensor& y = ctx.Output(0, q.type(), g.y_shape);

    // Keys and values: as given, or the present caches (the past, then these).
    launch::AttentionArgs args;
    args.type = type;
    args.q = q.raw_data();
    args.k = k.raw_data();
    args.v = v.raw_data();
    SetStrides(args.k_strides, g.k);
    SetStrides(args.v_strides, g.v);
    Tensor present_k, present_v;
    if (g.past > 0 || Wanted(node, 1) || Wanted(node, 2)) {
      const auto present = [&](size_t output, const Shape& shape, const Tensor& x, const HeadLayout& view,
                               const Tensor* past, Tensor& scratch) -> Tensor& {
        Tensor& out = Wanted(node, output) ? ctx.Output(output, q.type(), shape)
                                           : (scratch = Tensor::Allocate(q.type(), shape, ctx.allocator()));
        const int64_t strides[3] = {view.batch_stride, view.head_stride, view.position_stride};
        CheckLaunch(ctx,
                    launch::RowsInHeads(type, past ? past->raw_data() : nullptr, x.raw_data(), strides, nullptr,
                                        out.raw_data(), g.batch, g.kv_heads, g.past, g.new_len, view.features, stream),
                    "Attention present cache");
        return out;
      };
      const Tensor& keys = present(1, g.present_k_shape, k, g.k, past_k, present_k);
      const Tensor& values = present(2, g.present_v_shape, v, g.v, past_v, present_v);
      args.k = keys.raw_data();
      args.v = values.raw_data();
      SetStrides(args.k_strides, HeadLayout::Bnsh(g.batch, g.kv_heads, g.total, g.head_size));
      SetStrides(args.v_strides, HeadLayout::Bnsh(g.batch, g.kv_heads, g.total, g.v_head_size));
    }
    if (y.NumElements() == 0) return;

    // The mask as given when it covers every key and nothing is causal; otherwise one additive bias
    // [mask batch or 1, mask heads or 1, S, T].
    Tensor bias;
    int64_t mask_strides[4] = {0, 0, 0, 0};
    size_t mask_element = SizeOf(q.type());
    if (g.has_mask && !attributes_.is_causal && g.mask_dims[3] == g.total) {
      args.mask = mask->raw_data();
      args.bool_mask = g.bool_mask;
      mask_element = SizeOf(mask->type());
      for (int d = 0; d < 4; ++d) mask_strides[d] = g.mask_strides[d];
    } else if (g.has_mask || attributes_.is_causal) {
      const int64_t dims[4] = {g.mask_dims[0], g.mask_dims[1], g.q_len, g.total};
      bias = Tensor::Allocate(q.type(), Shape{dims[0], dims[1], dims[2], dims[3]}, ctx.allocator());
      CheckLaunch(ctx,
                  launch::AttentionBias(type, mask ? mask->raw_data() : nullptr, g.bool_mask, g.mask_strides.data(),
                                        g.has_mask ? g.mask_dims[3] : g.total, attributes_.is_causal, g.past, dims,
                                        bias.raw_data(), stream),
                  "Attention bias");
      args.mask = bias.raw_data();
      mask_strides[0] = dims[0] == 1 ? 0 : dims[1] * dims[2] * dims[3];
      mask_strides[1] = dims[1] == 1 ? 0 : dims[2] * dims[3];
      mask_strides[2] = dims[3];
      mask_strides[3] = 1;
    }

    // One launch per query head of a group: heads = Hkv, query / output / mask heads G apart.
    args.out = y.raw_data();
    args.batch = g.batch;
    args.heads = g.kv_heads;
    args.q_len = g.q_len;
    args.k_len = g.total;
    args.head_size = g.head_size;
    args.v_head_size = g.v_head_size;
    args.scale = g.scale;
    SetStrides(args.q_strides, g.q);
    SetStrides(args.out_strides, g.y);
    for (int d = 0; d < 4; ++d) args.mask_strides[d] = mask_strides[d];
    LaunchGroupedAttention(ctx, args, g.q_heads / g.kv_heads, SizeOf(q.type()), mask_element, stream,
                           "Attention launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  OnnxAttentionAttributes attributes_;
};

}  // namespace

void RegisterOnnxAttentionKernels(KernelRegistry& registry) {
  registry.Register<OnnxAttentionKernel>(MakeDef("Attention", 23, INT_MAX, FloatTypes()));
}

}  // namespace tessera::cuda
