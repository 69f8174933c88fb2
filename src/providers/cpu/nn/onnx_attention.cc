// Attention (ai.onnx, opsets 23-25; Attention-24's nonpad_kv_seqlen input is refused): scaled dot-product attention with optional mask, causal masking, a key/value
// cache and grouped-query heads.
//   Q [B, Hq, S, D] or [B, S, Hq*D]; K [B, Hkv, L, D] or [B, L, Hkv*D]; V [B, Hkv, L, Dv] or [B, L, Hkv*Dv]
//   (3-D operands need attributes q_num_heads and kv_num_heads); past_key/past_value [B, Hkv, P, D/Dv].
//   present_key/value = concat(past, K/V) along the sequence (T = P + L keys); query head h reads key/value
//   head h / (Hq / Hkv).
//   scores = scale * Q K^T (scale defaults to 1/sqrt(D)); softcap > 0 maps them to softcap * tanh(scores /
//   softcap); then the bias: attn_mask (bool: false masks; float: added; broadcast to [B, Hq, S, T], a last dim
//   shorter than T is padded with masked entries) and, with is_causal, -inf where key j > query i + P.
//   Y = softmax(scores + bias) V, in Q's layout (3-D: [B, S, Hq*Dv]). qk_matmul_output (output 3) is the scores
//   (qk_matmul_output_mode 0) or the probabilities (3). A row with every key masked gives NaN, as the spec's
//   softmax does. Arithmetic in float32 (also for float16/bfloat16 operands).
#include <cmath>
#include <limits>

#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/nn/attention_core.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

HeadView Describe(const Node& node, const Tensor& t, int64_t heads_attribute, const char* what) {
  HeadView v;
  const Shape& s = t.shape();
  if (s.rank() == 4) {
    v = {s[0], s[1], s[2], s[3], s[1] * s[2] * s[3], s[2] * s[3], s[3]};
  } else if (s.rank() == 3) {
    if (heads_attribute <= 0 || s[2] % heads_attribute != 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " is ", t,
           "; a 3-D operand needs q_num_heads / kv_num_heads dividing its last dim");
    const int64_t features = s[2] / heads_attribute;
    v = {s[0], heads_attribute, s[1], features, s[1] * s[2], features, s[2]};
  } else {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " is ", t, ", expected rank 3 or 4");
  }
  return v;
}

class OnnxAttention : public Kernel {
 public:
  explicit OnnxAttention(const KernelInfo& info)
      : is_causal_(info.node().GetInt("is_causal", 0) != 0),
        q_heads_(info.node().GetInt("q_num_heads", 0)),
        kv_heads_(info.node().GetInt("kv_num_heads", 0)),
        mode_(info.node().GetInt("qk_matmul_output_mode", 0)),
        scale_(info.node().GetFloat("scale", 0.0f)),
        has_scale_(info.node().HasAttribute("scale")),
        softcap_(info.node().GetFloat("softcap", 0.0f)) {
    if (mode_ != 0 && mode_ != 3)
      Fail(ErrorCode::kNotImplemented, info.node().Describe(), ": qk_matmul_output_mode ", mode_,
           " is not supported (0: scores, 3: probabilities)");
    // Attention-24's seventh input: per-batch key/value lengths of a padded cache (for TensorScatter's in-place
    // updates). Not implemented: refused rather than ignored.
    const std::vector<std::string>& inputs = info.node().inputs;
    if (inputs.size() > 6 && !inputs[6].empty())
      Fail(ErrorCode::kNotImplemented, info.node().Describe(), ": input 6 (nonpad_kv_seqlen, opset 24) is not supported");
  }

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
    for (const Tensor* t : {&k, &v, past_k, past_v})
      if (t != nullptr && t->type() != q.type())
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", *t, " must have Q's type ", DataTypeName(q.type()));
    if (q.shape().rank() != k.shape().rank() || q.shape().rank() != v.shape().rank())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": Q ", q, ", K ", k, " and V ", v, " must have one rank");
    const HeadView vq = Describe(node, q, q_heads_, "Q"), vk = Describe(node, k, kv_heads_, "K"),
               vv = Describe(node, v, kv_heads_, "V");
    const int64_t batch = vq.batch, hq = vq.heads, hkv = vk.heads, s_len = vq.positions, d = vq.features,
                  dv = vv.features;
    if (vk.batch != batch || vv.batch != batch || vv.heads != hkv || vk.positions != vv.positions || vk.features != d)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": Q ", q, ", K ", k, " and V ", v,
           " disagree (batch, heads, key length or head size)");
    if (hkv == 0 || hq % hkv != 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", hq, " query heads are not a multiple of ", hkv,
           " key/value heads");
    const int64_t past = past_k ? past_k->shape()[2] : 0, total = past + vk.positions;
    if ((past_k == nullptr) != (past_v == nullptr))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": past_key and past_value come together");
    if (past_k && (past_k->shape() != Shape{batch, hkv, past, d} || past_v->shape() != Shape{batch, hkv, past, dv}))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": past_key ", *past_k, " / past_value ", *past_v,
           " must be [", batch, ", ", hkv, ", past, ", d, " / ", dv, "]");

    // present_key / present_value [B, Hkv, T, D]: the past, then this call's keys and values.
    Tensor present_k = ctx.NumOutputs() > 1 && !node.outputs[1].empty()
                           ? ctx.Output(1, q.type(), Shape{batch, hkv, total, d})
                           : Tensor::Allocate(q.type(), Shape{batch, hkv, total, d}, ctx.allocator());
    Tensor present_v = ctx.NumOutputs() > 2 && !node.outputs[2].empty()
                           ? ctx.Output(2, q.type(), Shape{batch, hkv, total, dv})
                           : Tensor::Allocate(q.type(), Shape{batch, hkv, total, dv}, ctx.allocator());
    ConcatenatePast<T>(past_k ? past_k->Data<T>() : nullptr, past, k.Data<T>(), vk, present_k.Data<T>());
    ConcatenatePast<T>(past_v ? past_v->Data<T>() : nullptr, past, v.Data<T>(), vv, present_v.Data<T>());

    // The mask broadcast to [B, Hq, S, T] through strides; a last dim shorter than T masks the rest.
    const bool bool_mask = mask && mask->type() == DataType::kBool;
    if (mask && !bool_mask && mask->type() != q.type())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attn_mask is ", *mask, ", expected bool or ",
           DataTypeName(q.type()));
    std::array<int64_t, 4> mask_dims{1, 1, 1, 1}, mask_strides{0, 0, 0, 0};
    if (mask) {
      const size_t rank = mask->shape().rank();
      if (rank < 2 || rank > 4)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attn_mask is ", *mask, ", expected rank 2 to 4");
      int64_t stride = 1;
      for (size_t i = 0; i < rank; ++i) mask_dims[4 - rank + i] = mask->shape()[i];  // aligned to the right
      for (size_t axis = 4; axis-- > 4 - rank;) {
        mask_strides[axis] = mask_dims[axis] == 1 && axis != 3 ? 0 : stride;
        stride *= mask_dims[axis];
      }
      const std::array<int64_t, 3> want{batch, hq, s_len};
      for (size_t axis = 0; axis < 3; ++axis)
        if (mask_dims[axis] != 1 && mask_dims[axis] != want[axis])
          Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attn_mask ", *mask, " does not broadcast to [", batch,
               ", ", hq, ", ", s_len, ", ", total, "]");
      if (mask_dims[3] > total)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attn_mask ", *mask, " has more than ", total, " keys");
    }

    Tensor& y = ctx.Output(0, q.type(), q.shape().rank() == 4 ? Shape{batch, hq, s_len, dv}
                                                                 : Shape{batch, s_len, hq * dv});
    const HeadView vy = q.shape().rank() == 4 ? HeadView::Bnsh(batch, hq, s_len, dv) : HeadView::Bshd(batch, hq, s_len, dv);
    T* scores_out = nullptr;
    if (ctx.NumOutputs() > 3 && !node.outputs[3].empty())
      scores_out = ctx.Output(3, q.type(), Shape{batch, hq, s_len, total}).template Data<T>();

    const float scale = has_scale_ ? scale_ : 1.0f / std::sqrt(static_cast<float>(d));
    const uint8_t* mask_bool = bool_mask ? reinterpret_cast<const uint8_t*>(mask->raw_data()) : nullptr;
    const T* mask_add = mask && !bool_mask ? mask->Data<T>() : nullptr;
    const auto bias = [&](int64_t b, int64_t h, int64_t i, int64_t j, float score) {
      if (mask) {
        if (j >= mask_dims[3]) return kMaskedScore;
        const int64_t at = b * mask_strides[0] + h * mask_strides[1] + i * mask_strides[2] + j * mask_strides[3];
        score = mask_bool ? (mask_bool[at] ? score : kMaskedScore) : score + Load(mask_add[at]);
      }
      return is_causal_ && j > i + past ? kMaskedScore : score;
    };
    AttentionRows<T>(ctx.thread_pool(), q.Data<T>(), vq, present_k.Data<T>(), HeadView::Bnsh(batch, hkv, total, d),
                     present_v.Data<T>(), HeadView::Bnsh(batch, hkv, total, dv), y.Data<T>(), vy, scale, softcap_, bias,
                     scores_out, mode_ == 3);
  }

  bool is_causal_;
  int64_t q_heads_, kv_heads_, mode_;
  float scale_;
  bool has_scale_;
  float softcap_;
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
