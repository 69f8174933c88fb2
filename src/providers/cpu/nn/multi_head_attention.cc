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
  explicit MultiHeadAttention(const KernelInfo& info)
      : heads_(info.node().GetInt("num_heads", 0)),
        scale_(info.node().GetFloat("scale", 0.0f)),
        has_scale_(info.node().HasAttribute("scale")),
        mask_filter_(info.node().GetFloat("mask_filter_value", -10000.0f)),
        unidirectional_(info.node().GetInt("unidirectional", 0) != 0) {
    const Node& node = info.node();
    if (heads_ <= 0) Fail(ErrorCode::kInvalidModel, node.Describe(), ": num_heads must be positive, got ", heads_);
    for (size_t i : {size_t{8}, size_t{9}})
      if (node.HasInput(i))
        Fail(ErrorCode::kNotImplemented, node.Describe(), ": input ", i, i == 8 ? " (past_sequence_length, shared "
             "past/present buffers)" : " (cache_indirection, beam search)", " is not supported");
    if (node.outputs.size() > 3 && !node.outputs[3].empty())
      Fail(ErrorCode::kNotImplemented, node.Describe(), ": output 3 (qk) is not supported");
  }

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
    for (const Tensor* t : {key, value, bias, attention_bias, past_k, past_v})
      if (t != nullptr && t->type() != query.type())
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", *t, " must have the query's type ",
             DataTypeName(query.type()));
    const auto bad = [&](const auto&... what) { Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what...); };

    // The three operands, whatever their packing.
    const Shape& qs = query.shape();
    const int64_t n = heads_;
    Operand<T> q, k, v;
    if (qs.rank() == 5) {  // packed [B, L, N, 3, H]
      if (key || value) bad("a packed query [B, L, N, 3, H] comes without key and value");
      if (qs[2] != n || qs[3] != 3) bad("packed query ", query, " must be [B, L, ", n, ", 3, H]");
      const int64_t b = qs[0], l = qs[1], h = qs[4], row = n * 3 * h;
      for (int64_t c = 0; c < 3; ++c) {
        Operand<T>& o = c == 0 ? q : c == 1 ? k : v;
        o.data = query.Data<T>() + c * h;
        o.view = {b, n, l, h, l * row, 3 * h, row};
        o.bias_offset = c * n * h;
      }
    } else if (qs.rank() == 3) {
      if (qs[2] % n != 0) bad("query ", query, ": its last dim is not a multiple of num_heads ", n);
      const int64_t b = qs[0], s = qs[1], h = qs[2] / n;
      q = {query.Data<T>(), HeadView::Bshd(b, n, s, h), 0};
      if (key == nullptr) bad("key is required unless the query is packed [B, L, N, 3, H]");
      const Shape& ks = key->shape();
      if (ks.rank() == 5) {  // packed [B, L, N, 2, H]
        if (value) bad("a packed key [B, L, N, 2, H] comes without value");
        if (ks[0] != b || ks[2] != n || ks[3] != 2 || ks[4] != h)
          bad("packed key ", *key, " must be [", b, ", L, ", n, ", 2, ", h, "]");
        const int64_t l = ks[1], row = n * 2 * h;
        k = {key->Data<T>(), {b, n, l, h, l * row, 2 * h, row}, n * h};
        v = {key->Data<T>() + h, {b, n, l, h, l * row, 2 * h, row}, 2 * n * h};
      } else if (ks.rank() == 3) {
        if (value == nullptr || value->shape().rank() != 3) bad("a key [B, L, D] needs a value [B, L, Dv]");
        const Shape& vs = value->shape();
        if (ks[0] != b || ks[2] != n * h || vs[0] != b || vs[1] != ks[1] || vs[2] % n != 0)
          bad("key ", *key, " / value ", *value, " do not match query ", query, " (", n, " heads)");
        k = {key->Data<T>(), HeadView::Bshd(b, n, ks[1], h), n * h};
        v = {value->Data<T>(), HeadView::Bshd(b, n, vs[1], vs[2] / n), 2 * n * h};
      } else if (ks.rank() == 4) {  // [B, N, L, H]: projected and in heads already (cross-attention caches)
        if (value == nullptr || value->shape().rank() != 4) bad("a key [B, N, L, H] needs a value [B, N, L, Hv]");
        const Shape& vs = value->shape();
        if (ks[0] != b || ks[1] != n || ks[3] != h || vs[0] != b || vs[1] != n || vs[2] != ks[2])
          bad("key ", *key, " / value ", *value, " must be [", b, ", ", n, ", L, ", h, " / Hv]");
        if (bias) Fail(ErrorCode::kNotImplemented, node.Describe(), ": bias with key/value in [B, N, L, H]");
        if (past_k || past_v) bad("past_key/past_value cannot extend a key/value given in [B, N, L, H]");
        k = {key->Data<T>(), HeadView::Bnsh(b, n, ks[2], h), 0};
        v = {value->Data<T>(), HeadView::Bnsh(b, n, vs[2], vs[3]), 0};
      } else {
        bad("key ", *key, " must be [B, L, D], [B, L, N, 2, H] or [B, N, L, H]");
      }
    } else {
      bad("query ", query, " must be [B, S, D] or packed [B, L, N, 3, H]");
    }
    const int64_t batch = q.view.batch, s_len = q.view.positions, h = q.view.features, hv = v.view.features;
    const int64_t l_len = k.view.positions;
    if (k.view.features != h) bad("key head size ", k.view.features, " differs from the query's ", h);
    if (bias && bias->NumElements() != 2 * n * h + n * hv)
      bad("bias ", *bias, " must hold ", 2 * n * h + n * hv, " values (D + D + Dv)");
    if ((past_k == nullptr) != (past_v == nullptr)) bad("past_key and past_value come together");
    const int64_t past = past_k ? past_k->shape()[2] : 0, total = past + l_len;
    if (past_k && (past_k->shape() != Shape{batch, n, past, h} || past_v->shape() != Shape{batch, n, past, hv}))
      bad("past_key ", *past_k, " / past_value ", *past_v, " must be [", batch, ", ", n, ", P, ", h, " / ", hv, "]");

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
    const int32_t* lengths = nullptr;
    const int32_t* keep = nullptr;
    bool per_query = false;  // a [B, S, T] mask
    if (padding) {
      if (padding->type() != DataType::kInt32) bad("key_padding_mask is ", *padding, ", expected int32");
      const Shape& ms = padding->shape();
      if (ms == Shape{batch}) {
        lengths = padding->Data<int32_t>();
      } else if (ms == Shape{batch, total}) {
        keep = padding->Data<int32_t>();
      } else if (ms == Shape{batch, s_len, total}) {
        keep = padding->Data<int32_t>();
        per_query = true;
      } else if (ms == Shape{3 * batch + 2}) {
        Fail(ErrorCode::kNotImplemented, node.Describe(), ": key_padding_mask ", *padding,
             " (the 3 * batch + 2 form) is not supported");
      } else {
        bad("key_padding_mask ", *padding, " must be [", batch, "], [", batch, ", ", total, "] or [", batch, ", ",
            s_len, ", ", total, "]");
      }
    }
    int64_t bias_sb = 0, bias_sh = 0;
    if (attention_bias) {
      const Shape& as = attention_bias->shape();
      if (as.rank() != 4 || (as[0] != 1 && as[0] != batch) || (as[1] != 1 && as[1] != n) || as[2] != s_len ||
          as[3] != total)
        bad("attention_bias ", *attention_bias, " must be [", batch, " or 1, ", n, " or 1, ", s_len, ", ", total, "]");
      bias_sb = as[0] == 1 ? 0 : as[1] * s_len * total;
      bias_sh = as[1] == 1 ? 0 : s_len * total;
    }
    const T* added = attention_bias ? attention_bias->Data<T>() : nullptr;
    const auto score_bias = [&](int64_t b, int64_t head, int64_t i, int64_t j, float score) {
      if (added) score += Load(added[b * bias_sb + head * bias_sh + i * total + j]);
      bool padded = false;
      if (lengths != nullptr) padded = j >= lengths[b];
      if (keep != nullptr) padded = keep[(per_query ? b * s_len + i : b) * total + j] == 0;
      if (padded) score += mask_filter_;
      if (unidirectional_ && j > i + past) score += mask_filter_;
      return score;
    };

    Tensor& y = ctx.Output(0, query.type(), Shape{batch, s_len, n * hv});
    const float scale = has_scale_ ? scale_ : 1.0f / std::sqrt(static_cast<float>(h));
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

  int64_t heads_;
  float scale_;
  bool has_scale_;
  float mask_filter_;
  bool unidirectional_;
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
