#include "tessera/ep/onnx_attention_geometry.h"

#include <cmath>

#include "tessera/status.h"

namespace tessera {

namespace {

HeadLayout Describe(const Node& node, const Tensor& t, int64_t heads_attribute, const char* what) {
  const Shape& s = t.shape();
  if (s.rank() == 4) return {s[0], s[1], s[2], s[3], s[1] * s[2] * s[3], s[2] * s[3], s[3]};
  if (s.rank() == 3) {
    if (heads_attribute <= 0 || s[2] % heads_attribute != 0)
      Fail(ErrorCode::kInvalidArgument, node, ": ", what, " is ", t,
           "; a 3-D operand needs q_num_heads / kv_num_heads dividing its last dim");
    const int64_t features = s[2] / heads_attribute;
    return {s[0], heads_attribute, s[1], features, s[1] * s[2], features, s[2]};
  }
  Fail(ErrorCode::kInvalidArgument, node, ": ", what, " is ", t, ", expected rank 3 or 4");
}

}  // namespace

HeadLayout HeadLayout::Bnsh(int64_t batch, int64_t heads, int64_t positions, int64_t features) {
  return {batch, heads, positions, features, heads * positions * features, positions * features, features};
}

HeadLayout HeadLayout::Bshd(int64_t batch, int64_t heads, int64_t positions, int64_t features) {
  return {batch, heads, positions, features, positions * heads * features, features, heads * features};
}

OnnxAttentionAttributes ReadOnnxAttentionAttributes(const Node& node) {
  OnnxAttentionAttributes a;
  a.is_causal = node.GetInt("is_causal", 0) != 0;
  a.q_heads = node.GetInt("q_num_heads", 0);
  a.kv_heads = node.GetInt("kv_num_heads", 0);
  a.qk_output_mode = node.GetInt("qk_matmul_output_mode", 0);
  a.has_scale = node.HasAttribute("scale");
  a.scale = node.GetFloat("scale", 0.0f);
  a.softcap = node.GetFloat("softcap", 0.0f);
  if (a.qk_output_mode != 0 && a.qk_output_mode != 3)
    Fail(ErrorCode::kNotImplemented, node, ": qk_matmul_output_mode ", a.qk_output_mode,
         " is not supported (0: scores, 3: probabilities)");
  // Attention-24's seventh input: per-batch key/value lengths of a padded cache (for TensorScatter's in-place
  // updates). Not implemented: refused rather than ignored.
  if (node.inputs.size() > 6 && !node.inputs[6].empty())
    Fail(ErrorCode::kNotImplemented, node, ": input 6 (nonpad_kv_seqlen, opset 24) is not supported");
  return a;
}

OnnxAttentionGeometry MakeOnnxAttentionGeometry(const Node& node, const OnnxAttentionAttributes& attributes,
                                                const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                                                const Tensor* past_k, const Tensor* past_v) {
  for (const Tensor* t : {&k, &v, past_k, past_v})
    if (t != nullptr && t->type() != q.type())
      Fail(ErrorCode::kInvalidArgument, node, ": ", *t, " must have Q's type ", DataTypeName(q.type()));
  if (q.shape().rank() != k.shape().rank() || q.shape().rank() != v.shape().rank())
    Fail(ErrorCode::kInvalidArgument, node, ": Q ", q, ", K ", k, " and V ", v, " must have one rank");
  OnnxAttentionGeometry g;
  g.q = Describe(node, q, attributes.q_heads, "Q");
  g.k = Describe(node, k, attributes.kv_heads, "K");
  g.v = Describe(node, v, attributes.kv_heads, "V");
  g.batch = g.q.batch;
  g.q_heads = g.q.heads;
  g.kv_heads = g.k.heads;
  g.q_len = g.q.positions;
  g.new_len = g.k.positions;
  g.head_size = g.q.features;
  g.v_head_size = g.v.features;
  if (g.k.batch != g.batch || g.v.batch != g.batch || g.v.heads != g.kv_heads || g.v.positions != g.new_len ||
      g.k.features != g.head_size)
    Fail(ErrorCode::kInvalidArgument, node, ": Q ", q, ", K ", k, " and V ", v,
         " disagree (batch, heads, key length or head size)");
  if (g.kv_heads == 0 || g.q_heads % g.kv_heads != 0)
    Fail(ErrorCode::kInvalidArgument, node, ": ", g.q_heads, " query heads are not a multiple of ", g.kv_heads,
         " key/value heads");
  if ((past_k == nullptr) != (past_v == nullptr))
    Fail(ErrorCode::kInvalidArgument, node, ": past_key and past_value come together");
  g.past = past_k != nullptr && past_k->shape().rank() == 4 ? past_k->shape()[2] : 0;
  g.total = g.past + g.new_len;
  if (past_k && (past_k->shape() != Shape{g.batch, g.kv_heads, g.past, g.head_size} ||
                 past_v->shape() != Shape{g.batch, g.kv_heads, g.past, g.v_head_size}))
    Fail(ErrorCode::kInvalidArgument, node, ": past_key ", *past_k, " / past_value ", *past_v, " must be [", g.batch,
         ", ", g.kv_heads, ", past, ", g.head_size, " / ", g.v_head_size, "]");
  g.present_k_shape = Shape{g.batch, g.kv_heads, g.total, g.head_size};
  g.present_v_shape = Shape{g.batch, g.kv_heads, g.total, g.v_head_size};
  g.scores_shape = Shape{g.batch, g.q_heads, g.q_len, g.total};
  if (q.shape().rank() == 4) {
    g.y_shape = Shape{g.batch, g.q_heads, g.q_len, g.v_head_size};
    g.y = HeadLayout::Bnsh(g.batch, g.q_heads, g.q_len, g.v_head_size);
  } else {
    g.y_shape = Shape{g.batch, g.q_len, g.q_heads * g.v_head_size};
    g.y = HeadLayout::Bshd(g.batch, g.q_heads, g.q_len, g.v_head_size);
  }
  g.scale = attributes.has_scale ? attributes.scale : 1.0f / std::sqrt(static_cast<float>(g.head_size));

  if (mask != nullptr) {
    g.has_mask = true;
    g.bool_mask = mask->type() == DataType::kBool;
    if (!g.bool_mask && mask->type() != q.type())
      Fail(ErrorCode::kInvalidArgument, node, ": attn_mask is ", *mask, ", expected bool or ", DataTypeName(q.type()));
    const size_t rank = mask->shape().rank();
    if (rank < 2 || rank > 4)
      Fail(ErrorCode::kInvalidArgument, node, ": attn_mask is ", *mask, ", expected rank 2 to 4");
    int64_t stride = 1;
    for (size_t i = 0; i < rank; ++i) g.mask_dims[4 - rank + i] = mask->shape()[i];  // aligned to the right
    for (size_t axis = 4; axis-- > 4 - rank;) {
      g.mask_strides[axis] = g.mask_dims[axis] == 1 && axis != 3 ? 0 : stride;
      stride *= g.mask_dims[axis];
    }
    const std::array<int64_t, 3> want{g.batch, g.q_heads, g.q_len};
    for (size_t axis = 0; axis < 3; ++axis)
      if (g.mask_dims[axis] != 1 && g.mask_dims[axis] != want[axis])
        Fail(ErrorCode::kInvalidArgument, node, ": attn_mask ", *mask, " does not broadcast to [", g.batch, ", ",
             g.q_heads, ", ", g.q_len, ", ", g.total, "]");
    if (g.mask_dims[3] > g.total)
      Fail(ErrorCode::kInvalidArgument, node, ": attn_mask ", *mask, " has more than ", g.total, " keys");
  }
  return g;
}

}  // namespace tessera
