// com.microsoft MultiHeadAttention on the CUDA EP in the forms graph/passes/mha_lowering does not rewrite into
// ai.tessera::Attention (past / present caches, unidirectional, lengths as the key padding mask, packed Q/K/V or K/V,
// keys and values already in heads): checks and strides shared with the CPU kernel (tessera/ep/mha_geometry.h;
// semantics in providers/cpu/nn/multi_head_attention.cc), the operands in heads with their bias and one additive bias
// from multi_head_attention.cu, then the fused attention kernel. Refused forms (the qk output, shared buffers, beam
// search) stay on the CPU EP, which names them.
#include <climits>

#include "tessera/ep/mha_geometry.h"
#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/grouped_attention.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

class MultiHeadAttentionKernel : public Kernel {
 public:
  explicit MultiHeadAttentionKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), attributes_(ReadMhaAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Node& node = ctx.node();
    const Tensor& query = ctx.Input(0);
    const Tensor* key = ctx.OptionalInput(1);
    const Tensor* value = ctx.OptionalInput(2);
    const Tensor* bias = ctx.OptionalInput(3);
    const Tensor* padding = ctx.OptionalInput(4);
    const Tensor* attention_bias = ctx.OptionalInput(5);
    const Tensor* past_k = ctx.OptionalInput(6);
    const Tensor* past_v = ctx.OptionalInput(7);
    const MhaGeometry g =
        MakeMhaGeometry(node, attributes_, query, key, value, bias, padding, attention_bias, past_k, past_v);
    const launch::ElementType type = FloatElementType(ctx, query.type());
    const cudaStream_t stream = StreamOf(ctx);
    const int64_t element = static_cast<int64_t>(SizeOf(query.type()));
    const auto data = [&](const MhaOperand& o) {
      const Tensor& holder = o.input == 0 ? query : o.input == 1 ? *key : *value;
      return static_cast<const char*>(holder.raw_data()) + o.element_offset * element;
    };
    const auto bias_of = [&](const MhaOperand& o) -> const void* {
      return bias != nullptr ? static_cast<const char*>(bias->raw_data()) + o.bias_offset * element : nullptr;
    };
    // Operand o in heads, [B, N, P + rows, F], with its bias, after `past` (null: none).
    const auto in_heads = [&](const MhaOperand& o, const Tensor* past, Tensor& dst, const char* what) {
      const int64_t strides[3] = {o.sb, o.sh, o.sp};
      CheckLaunch(ctx,
                  launch::RowsInHeads(type, past != nullptr ? past->raw_data() : nullptr, data(o), strides, bias_of(o),
                                  dst.raw_data(), g.batch, g.heads, past != nullptr ? g.past : 0, o.positions,
                                  o.features, stream),
                  what);
    };
    Tensor q_heads = Tensor::Allocate(query.type(), Shape{g.batch, g.heads, g.s, g.head}, ctx.allocator());
    in_heads(g.q, nullptr, q_heads, "MultiHeadAttention query");
    const auto present = [&](size_t output, const Shape& shape, Tensor& scratch) -> Tensor& {
      return ctx.NumOutputs() > output && !node.outputs[output].empty()
                 ? ctx.Output(output, query.type(), shape)
                 : (scratch = Tensor::Allocate(query.type(), shape, ctx.allocator()));
    };
    Tensor k_scratch, v_scratch;
    Tensor& present_k = present(1, Shape{g.batch, g.heads, g.total, g.head}, k_scratch);
    Tensor& present_v = present(2, Shape{g.batch, g.heads, g.total, g.v_head}, v_scratch);
    in_heads(g.k, past_k, present_k, "MultiHeadAttention present key");
    in_heads(g.v, past_v, present_v, "MultiHeadAttention present value");

    Tensor& y = ctx.Output(0, query.type(), Shape{g.batch, g.s, g.heads * g.v_head});
    if (y.NumElements() == 0) return;
    launch::AttentionArgs a;
    a.type = type;
    a.q = q_heads.raw_data();
    a.k = present_k.raw_data();
    a.v = present_v.raw_data();
    a.out = y.raw_data();
    a.batch = g.batch;
    a.heads = g.heads;
    a.q_len = g.s;
    a.k_len = g.total;
    a.head_size = g.head;
    a.v_head_size = g.v_head;
    a.scale = g.scale;
    const int64_t q_strides[4] = {g.heads * g.s * g.head, g.s * g.head, g.head, 1};
    const int64_t k_strides[4] = {g.heads * g.total * g.head, g.total * g.head, g.head, 1};
    const int64_t v_strides[4] = {g.heads * g.total * g.v_head, g.total * g.v_head, g.v_head, 1};
    const int64_t out_strides[4] = {g.s * g.heads * g.v_head, g.v_head, g.heads * g.v_head, 1};
    for (int d = 0; d < 4; ++d) {
      a.q_strides[d] = q_strides[d];
      a.k_strides[d] = k_strides[d];
      a.v_strides[d] = v_strides[d];
      a.out_strides[d] = out_strides[d];
    }
    // One additive bias for whatever masks the scores.
    Tensor scores_bias;
    if (attention_bias != nullptr || padding != nullptr || attributes_.unidirectional) {
      launch::MhaBiasArgs m;
      m.type = type;
      m.batch = g.batch;
      m.heads = g.attention_bias_sh != 0 ? g.heads : 1;
      m.s = g.s;
      m.total = g.total;
      m.past = g.past;
      m.attention_bias = attention_bias != nullptr ? attention_bias->raw_data() : nullptr;
      m.attention_bias_sb = g.attention_bias_sb;
      m.attention_bias_sh = g.attention_bias_sh;
      m.padding = padding != nullptr ? static_cast<const int32_t*>(padding->raw_data()) : nullptr;
      m.padding_form = static_cast<int>(g.padding);
      m.unidirectional = attributes_.unidirectional;
      m.mask_filter = attributes_.mask_filter;
      scores_bias = Tensor::Allocate(query.type(), Shape{g.batch, m.heads, g.s, g.total}, ctx.allocator());
      CheckLaunch(ctx, launch::MhaBias(m, scores_bias.raw_data(), stream), "MultiHeadAttention bias");
      a.mask = scores_bias.raw_data();
      a.mask_strides[0] = m.heads * g.s * g.total;
      a.mask_strides[1] = m.heads == 1 ? 0 : g.s * g.total;
      a.mask_strides[2] = g.total;
      a.mask_strides[3] = 1;
    }
    LaunchGroupedAttention(ctx, a, 1, static_cast<size_t>(element), static_cast<size_t>(element), stream,
                           "MultiHeadAttention launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  MhaAttributes attributes_;
};

}  // namespace

void RegisterMultiHeadAttentionKernels(KernelRegistry& registry) {
  KernelDef def = MakeDef("MultiHeadAttention", 1, INT_MAX, FloatTypes());
  def.domain = "com.microsoft";
  registry.Register<MultiHeadAttentionKernel>(std::move(def));
}

}  // namespace tessera::cuda
