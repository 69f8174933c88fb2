// com.microsoft GroupQueryAttention on the CUDA EP: checks and strides shared with the CPU kernel
// (tessera/ep/gqa_geometry.h; semantics in providers/cpu/nn/group_query_attention.cc), the present caches, rotated
// query and per-item causal bias from group_query_attention.cu, then the fused attention kernel of ai.tessera::Attention
// once per query head of a group. seqlens_k is read on the device (a length that does not fit the cache is clamped
// there; the CPU kernel rejects it); total_sequence_length on the host. softcap stays on the CPU EP (NodeIsSupported).
#include <climits>

#include "tessera/ep/gqa_geometry.h"
#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/grouped_attention.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

class GroupQueryAttentionKernel : public Kernel {
 public:
  explicit GroupQueryAttentionKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), attributes_(ReadGqaAttributes(info.node())) {
    if (attributes_.softcap != 0.0f)
      Fail(ErrorCode::kNotImplemented, info.node(), ": softcap runs on the CPU EP only");
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Node& node = ctx.node();
    const Tensor& query = ctx.Input(0);
    const Tensor* key = ctx.OptionalInput(1);
    const Tensor* value = ctx.OptionalInput(2);
    const Tensor* past_k = ctx.OptionalInput(3);
    const Tensor* past_v = ctx.OptionalInput(4);
    const Tensor& seqlens = ctx.Input(5);
    const Tensor& total_length = ctx.Input(6);
    const Tensor* cos = ctx.OptionalInput(7);
    const Tensor* sin = ctx.OptionalInput(8);
    if (total_length.type() != DataType::kInt32 || total_length.NumElements() != 1)
      Fail(ErrorCode::kInvalidArgument, node, ": total_sequence_length is ", total_length, ", expected one int32");
    const GqaGeometry g = MakeGqaGeometry(node, attributes_, query, key, value, past_k, past_v, seqlens,
                                          total_length.Data<int32_t>()[0], cos, sin);
    const cudaStream_t stream = StreamOf(ctx);
    const size_t element = SizeOf(query.type());
    launch::GqaArgs args;
    args.type = FloatElementType(ctx, query.type());
    args.seqlens = static_cast<const int32_t*>(seqlens.raw_data());  // on the device
    args.first_prompt = g.first_prompt;
    args.batch = g.batch;
    args.s = g.s;
    args.kv_heads = attributes_.kv_heads;
    args.q_heads = attributes_.heads;
    args.head = g.head;
    args.present_rows = g.present_rows;
    args.past_rows = g.past_rows;
    if (attributes_.rotary) {
      args.cos = cos->raw_data();
      args.sin = sin->raw_data();
      args.rot = g.rot;
      args.rotary_rows = g.rotary_rows;
      args.interleaved = attributes_.interleaved;
    }

    // The present caches: the outputs (or scratch), the past's own buffers when bound over them.
    const Shape present_shape{g.batch, attributes_.kv_heads, g.present_rows, g.head};
    const char* q_base = static_cast<const char*>(query.raw_data());
    const auto present = [&](size_t output, const Tensor* past, const Tensor* x, const GqaRows& rows, bool rotate,
                             Tensor& scratch) -> Tensor& {
      Tensor& out = ctx.NumOutputs() > output && !node.outputs[output].empty()
                        ? ctx.Output(output, query.type(), present_shape)
                        : (scratch = Tensor::Allocate(query.type(), present_shape, ctx.allocator()));
      const void* source = x != nullptr ? x->raw_data() : q_base + rows.element_offset * static_cast<int64_t>(element);
      const int64_t strides[3] = {rows.batch, rows.head, rows.position};
      const bool in_place = past != nullptr && out.raw_data() == past->raw_data();
      CheckLaunch(ctx,
                  launch::GqaPresent(args, past != nullptr ? past->raw_data() : nullptr, source, strides, rotate,
                                     in_place, out.raw_data(), stream),
                  "GroupQueryAttention present cache");
      return out;
    };
    Tensor k_scratch, v_scratch;
    const Tensor& present_k = present(1, past_k, key, g.k, attributes_.rotary, k_scratch);
    const Tensor& present_v = present(2, past_v, value, g.v, false, v_scratch);

    Tensor& y = ctx.Output(0, query.type(), Shape{g.batch, g.s, attributes_.heads * g.head});
    if (y.NumElements() == 0) return;
    // The query, rotated into [B, S, Nq, H] when asked.
    const void* q = query.raw_data();
    int64_t q_strides[3] = {g.q.batch, g.q.head, g.q.position};
    Tensor rotated;
    if (attributes_.rotary) {
      rotated = Tensor::Allocate(query.type(), y.shape(), ctx.allocator());
      CheckLaunch(ctx, launch::GqaRotateQuery(args, q, q_strides, rotated.raw_data(), stream),
                  "GroupQueryAttention rotary");
      q = rotated.raw_data();
      q_strides[0] = g.s * attributes_.heads * g.head;
      q_strides[1] = g.head;
      q_strides[2] = attributes_.heads * g.head;
    }
    Tensor bias = Tensor::Allocate(query.type(), Shape{g.batch, g.s, g.present_rows}, ctx.allocator());
    CheckLaunch(ctx, launch::GqaBias(args, attributes_.window, bias.raw_data(), stream), "GroupQueryAttention bias");

    // One launch per query head of a group: heads = Nkv, query and output heads G apart, one bias for all heads.
    launch::AttentionArgs a;
    a.type = args.type;
    a.q = q;
    a.k = present_k.raw_data();
    a.v = present_v.raw_data();
    a.mask = bias.raw_data();
    a.out = y.raw_data();
    a.batch = g.batch;
    a.heads = attributes_.kv_heads;
    a.q_len = g.s;
    a.k_len = g.present_rows;
    a.head_size = a.v_head_size = g.head;
    a.scale = g.scale;
    const int64_t kv_strides[4] = {attributes_.kv_heads * g.present_rows * g.head, g.present_rows * g.head, g.head, 1};
    const int64_t out_strides[4] = {g.s * attributes_.heads * g.head, g.head, attributes_.heads * g.head, 1};
    const int64_t mask_strides[4] = {g.s * g.present_rows, 0, g.present_rows, 1};
    for (int d = 0; d < 4; ++d) {
      a.k_strides[d] = a.v_strides[d] = kv_strides[d];
      a.out_strides[d] = out_strides[d];
      a.mask_strides[d] = mask_strides[d];
      a.q_strides[d] = d < 3 ? q_strides[d] : 1;
    }
    LaunchGroupedAttention(ctx, a, attributes_.heads / attributes_.kv_heads, element, element, stream,
                           "GroupQueryAttention launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  GqaAttributes attributes_;
};

}  // namespace

void RegisterGroupQueryAttentionKernels(KernelRegistry& registry) {
  KernelDef def = MakeDef("GroupQueryAttention", 1, INT_MAX, FloatTypes());
  def.domain = "com.microsoft";
  def.host_inputs = {6};             // total_sequence_length: the cache's length is decided on the host
  def.in_place_inputs = {-1, 3, 4};  // present_key / present_value over past_key / past_value (a shared cache)
  registry.Register<GroupQueryAttentionKernel>(std::move(def));
}

}  // namespace tessera::cuda
