// com.microsoft MultiHeadAttention (ONNX Runtime's contrib op, written by its transformer optimizer for encoders,
// decoders and cross attention), with num_heads N, scale (default 1/sqrt(head size)), mask_filter_value (default
// -10000) and unidirectional:
//   query [B, S, D], or packed Q/K/V [B, L, N, 3, H] (key and value absent)
//   key   [B, L, D], or packed K/V [B, L, N, 2, H] (value absent), or [B, N, L, H] (already in heads; no bias, no past)
//   value [B, L, Dv], or [B, N, L, Hv] with a 4-D key
//   bias  [D + D + Dv]: added to the projections of Q, K and V (in that order; packed forms too)
//   key_padding_mask int32: [B] key lengths, [B, T] or [B, S, T] with 0 for padding (T = P + L keys)
//   attention_bias [B or 1, N or 1, S, T]: added to the scores
//   past_key / past_value [B, N, P, H / Hv]: keys and values before this call's
// Outputs: output [B, S, N * Hv]; present_key / present_value [B, N, T, H / Hv] (the past, then this call's). Keys
// masked by the padding mask, and with unidirectional keys after query i + P, get mask_filter_value added to their
// score (as ONNX Runtime's raw-mask conversion does), so a row with every key masked stays finite.
// Not supported (refused with the reason): the (3 * B + 2) mask form, past_sequence_length (shared past/present
// buffers), cache_indirection (beam search) and the qk output.
#include <cmath>

#include "tessera/ep/mha_geometry.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/nn/attention_core.h"

namespace tessera::cpu {
namespace {

// One operand's elements as [B, N, positions, features] from a base pointer, and where its bias starts.
template <typename T>
struct Operand {
  const T* data = nullptr;
  HeadView view;
  int64_t bias_offset = 0;  // index in the bias input of this operand's first feature of head 0
};

class MultiHeadAttention : public Kernel {
 public:
  explicit MultiHeadAttention(const KernelInfo& info) : attributes_(ReadMhaAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    DispatchType(ctx.Input(0).type(), TypeList<float, Float16, BFloat16>{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Run<T>(ctx);
    });
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx) const {
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
    const auto operand = [&](const MhaOperand& o) {
      const Tensor& holder = o.input == 0 ? query : o.input == 1 ? *key : *value;
      return Operand<T>{holder.Data<T>() + o.element_offset,
                        HeadView{o.batch, o.heads, o.positions, o.features, o.sb, o.sh, o.sp}, o.bias_offset};
    };
    const Operand<T> q = operand(g.q), k = operand(g.k), v = operand(g.v);
    const int64_t n = g.heads, batch = g.batch, s_len = g.s, h = g.head, hv = g.v_head, past = g.past,
                  total = g.total;

    // Q with its bias, and present K/V (the past, then this call's keys and values with their bias).
    const T* bias_data = bias ? bias->Data<T>() : nullptr;
    Tensor q_heads = Tensor::Allocate(query.type(), Shape{batch, n, s_len, h}, ctx.allocator());
    WithBias(q, bias_data, q_heads.Data<T>(), 0);
    Tensor present_k = ctx.NumOutputs() > 1 && !node.outputs[1].empty()
                           ? ctx.Output(1, query.type(), Shape{batch, n, total, h})
                           : Tensor::Allocate(query.type(), Shape{batch, n, total, h}, ctx.allocator());
    Tensor present_v = ctx.NumOutputs() > 2 && !node.outputs[2].empty()
                           ? ctx.Output(2, query.type(), Shape{batch, n, total, hv})
                           : Tensor::Allocate(query.type(), Shape{batch, n, total, hv}, ctx.allocator());
    CopyPast(past_k, present_k.Data<T>(), past, total);
    CopyPast(past_v, present_v.Data<T>(), past, total);
    WithBias(k, bias_data, present_k.Data<T>(), past, total);
    WithBias(v, bias_data, present_v.Data<T>(), past, total);

    // Masks.
    const int32_t* lengths = g.padding == MhaPadding::kLengths ? padding->Data<int32_t>() : nullptr;
    const int32_t* keep =
        g.padding == MhaPadding::kKeys || g.padding == MhaPadding::kPerQuery ? padding->Data<int32_t>() : nullptr;
    const bool per_query = g.padding == MhaPadding::kPerQuery;  // a [B, S, T] mask
    const int64_t bias_sb = g.attention_bias_sb, bias_sh = g.attention_bias_sh;
    const T* added = attention_bias ? attention_bias->Data<T>() : nullptr;
    const auto score_bias = [&](int64_t b, int64_t head, int64_t i, int64_t j, float score) {
      if (added) score += Load(added[b * bias_sb + head * bias_sh + i * total + j]);
      bool padded = false;
      if (lengths != nullptr) padded = j >= lengths[b];
      if (keep != nullptr) padded = keep[(per_query ? b * s_len + i : b) * total + j] == 0;
      if (padded) score += attributes_.mask_filter;
      if (attributes_.unidirectional && j > i + past) score += attributes_.mask_filter;
      return score;
    };

    Tensor& y = ctx.Output(0, query.type(), Shape{batch, s_len, n * hv});
    const float scale = g.scale;
    AttentionRows<T>(ctx.thread_pool(), q_heads.Data<T>(), HeadView::Bnsh(batch, n, s_len, h), present_k.Data<T>(),
                     HeadView::Bnsh(batch, n, total, h), present_v.Data<T>(), HeadView::Bnsh(batch, n, total, hv),
                     y.Data<T>(), HeadView::Bshd(batch, n, s_len, hv), scale, 0.0f, score_bias);
  }

  // dst [B, N, total, F] rows first..first+L = the operand plus its bias (rounded to T, as the unfused Add).
  template <typename T>
  static void WithBias(const Operand<T>& o, const T* bias, T* dst, int64_t first, int64_t total = -1) {
    const HeadView& w = o.view;
    if (total < 0) total = w.positions;
    for (int64_t b = 0; b < w.batch; ++b)
      for (int64_t h = 0; h < w.heads; ++h)
        for (int64_t p = 0; p < w.positions; ++p) {
          const T* in = o.data + w.Offset(b, h, p);
          T* out = dst + ((b * w.heads + h) * total + first + p) * w.features;
          if (bias == nullptr) {
            std::copy_n(in, w.features, out);
            continue;
          }
          const T* add = bias + o.bias_offset + h * w.features;
          for (int64_t f = 0; f < w.features; ++f) out[f] = Store<T>(Load(in[f]) + Load(add[f]));
        }
  }

  template <typename T>
  static void CopyPast(const Tensor* past, T* dst, int64_t past_len, int64_t total) {
    if (past == nullptr) return;
    const Shape& s = past->shape();
    const int64_t rows = s[0] * s[1], f = s[3];
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(past->Data<T>() + r * past_len * f, past_len * f, dst + r * total * f);
  }

  MhaAttributes attributes_;
};

}  // namespace

void RegisterMultiHeadAttentionKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "MultiHeadAttention";
  def.domain = "com.microsoft";
  def.input_types = {{0, {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}}};
  registry.Register<MultiHeadAttention>(std::move(def));
}

}  // namespace tessera::cpu
