// Attention (ai.onnx, opsets 23-25): semantics and checks in the EP SDK's tessera/ep/onnx_attention_geometry.h.
// Arithmetic in float32 (also for float16/bfloat16 operands), softcap and qk_matmul_output included.
#include <cmath>
#include <limits>

#include "tessera/ep/onnx_attention_geometry.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/nn/attention_core.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

HeadView ViewOf(const HeadLayout& l) {
  return {l.batch, l.heads, l.positions, l.features, l.batch_stride, l.head_stride, l.position_stride};
}

class OnnxAttention : public Kernel {
 public:
  explicit OnnxAttention(const KernelInfo& info) : attributes_(ReadOnnxAttentionAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& q = ctx.Input(0);
    DispatchType(q.type(), TypeList<float, Float16, BFloat16>{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Run<T>(ctx);
    });
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx) const {
    const Node& node = ctx.node();
    const Tensor &q = ctx.Input(0), &k = ctx.Input(1), &v = ctx.Input(2);
    const Tensor* mask = ctx.OptionalInput(3);
    const Tensor* past_k = ctx.OptionalInput(4);
    const Tensor* past_v = ctx.OptionalInput(5);
    const OnnxAttentionGeometry g = MakeOnnxAttentionGeometry(node, attributes_, q, k, v, mask, past_k, past_v);
    const int64_t batch = g.batch, hkv = g.kv_heads, past = g.past, total = g.total, d = g.head_size,
                  dv = g.v_head_size;
    const HeadView vk = ViewOf(g.k), vv = ViewOf(g.v);

    // present_key / present_value [B, Hkv, T, D]: the past, then this call's keys and values.
    Tensor present_k = ctx.NumOutputs() > 1 && !node.outputs[1].empty()
                           ? ctx.Output(1, q.type(), g.present_k_shape)
                           : Tensor::Allocate(q.type(), g.present_k_shape, ctx.allocator());
    Tensor present_v = ctx.NumOutputs() > 2 && !node.outputs[2].empty()
                           ? ctx.Output(2, q.type(), g.present_v_shape)
                           : Tensor::Allocate(q.type(), g.present_v_shape, ctx.allocator());
    ConcatenatePast<T>(past_k ? past_k->Data<T>() : nullptr, past, k.Data<T>(), vk, present_k.Data<T>());
    ConcatenatePast<T>(past_v ? past_v->Data<T>() : nullptr, past, v.Data<T>(), vv, present_v.Data<T>());

    Tensor& y = ctx.Output(0, q.type(), g.y_shape);
    T* scores_out = nullptr;
    if (ctx.NumOutputs() > 3 && !node.outputs[3].empty())
      scores_out = ctx.Output(3, q.type(), g.scores_shape).template Data<T>();

    const bool bool_mask = g.bool_mask;
    const std::array<int64_t, 4>& mask_dims = g.mask_dims;
    const std::array<int64_t, 4>& mask_strides = g.mask_strides;
    const uint8_t* mask_bool = bool_mask ? reinterpret_cast<const uint8_t*>(mask->raw_data()) : nullptr;
    const T* mask_add = mask && !bool_mask ? mask->Data<T>() : nullptr;
    const auto bias = [&](int64_t b, int64_t h, int64_t i, int64_t j, float score) {
      if (mask) {
        if (j >= mask_dims[3]) return kMaskedScore;
        const int64_t at = b * mask_strides[0] + h * mask_strides[1] + i * mask_strides[2] + j * mask_strides[3];
        score = mask_bool ? (mask_bool[at] ? score : kMaskedScore) : score + Load(mask_add[at]);
      }
      return attributes_.is_causal && j > i + past ? kMaskedScore : score;
    };
    // Causal: the queries [first, first + rows) read no key past position past + first + rows - 1.
    const bool causal = attributes_.is_causal;
    const auto key_end = [&](int64_t, int64_t first, int64_t rows) { return causal ? past + first + rows : total; };
    AttentionRows<T>(ctx.thread_pool(), q.Data<T>(), ViewOf(g.q), present_k.Data<T>(), HeadView::Bnsh(batch, hkv, total, d),
                     present_v.Data<T>(), HeadView::Bnsh(batch, hkv, total, dv), y.Data<T>(), ViewOf(g.y), g.scale,
                     attributes_.softcap, bias, scores_out, attributes_.qk_output_mode == 3, key_end);
  }

  OnnxAttentionAttributes attributes_;
};

}  // namespace

void RegisterOnnxAttentionKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "Attention";
  def.since_version = 23;
  def.input_types = {{0, {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}}};
  registry.Register<OnnxAttention>(std::move(def));
}

}  // namespace tessera::cpu
