#include "tessera/ep/gqa_geometry.h"

#include <algorithm>
#include <cmath>

#include "tessera/status.h"

namespace tessera {

GqaAttributes ReadGqaAttributes(const Node& node) {
  GqaAttributes a;
  a.heads = node.GetInt("num_heads", 0);
  a.kv_heads = node.GetInt("kv_num_heads", 0);
  a.window = node.GetInt("local_window_size", -1);
  a.rotary = node.GetInt("do_rotary", 0) != 0;
  a.interleaved = node.GetInt("rotary_interleaved", 0) != 0;
  a.has_scale = node.HasAttribute("scale");
  a.scale = node.GetFloat("scale", 0.0f);
  a.softcap = node.GetFloat("softcap", 0.0f);
  if (a.heads <= 0 || a.kv_heads <= 0 || a.heads % a.kv_heads != 0)
    Fail(ErrorCode::kInvalidModel, node, ": num_heads (", a.heads, ") must be a positive multiple of kv_num_heads (",
         a.kv_heads, ")");
  if (node.GetInt("smooth_softmax", 0) != 0)
    Fail(ErrorCode::kNotImplemented, node, ": smooth_softmax = 1 is not supported");
  if (node.GetInt("qk_output", 0) != 0) Fail(ErrorCode::kNotImplemented, node, ": qk_output other than 0 is not supported");
  const char* names[] = {"position_ids", "attention_bias", "head_sink"};
  for (size_t i = 9; i < node.inputs.size() && i < 12; ++i)
    if (!node.inputs[i].empty())
      Fail(ErrorCode::kNotImplemented, node, ": input ", i, " (", names[i - 9], ") is not supported");
  return a;
}

GqaGeometry MakeGqaGeometry(const Node& node, const GqaAttributes& attributes, const Tensor& query, const Tensor* key,
                            const Tensor* value, const Tensor* past_key, const Tensor* past_value, const Tensor& seqlens,
                            int64_t total_length, const Tensor* cos, const Tensor* sin) {
  if (query.shape().rank() != 3)
    Fail(ErrorCode::kInvalidArgument, node, ": query is ", query, ", expected [batch, sequence, hidden]");
  GqaGeometry g;
  g.batch = query.shape()[0];
  g.s = query.shape()[1];
  g.packed = key == nullptr;
  if (g.packed != (value == nullptr))
    Fail(ErrorCode::kInvalidArgument, node, ": key and value come together (or neither, packed QKV)");
  const int64_t width = query.shape()[2];
  const int64_t heads_in_query = g.packed ? attributes.heads + 2 * attributes.kv_heads : attributes.heads;
  g.head = width / heads_in_query;
  if (g.head <= 0 || g.head * heads_in_query != width)
    Fail(ErrorCode::kInvalidArgument, node, ": query is ", query, ", not ", heads_in_query, " heads of one size");
  g.q = {g.s * width, g.head, width, 0};
  if (g.packed) {
    g.k = {g.s * width, g.head, width, attributes.heads * g.head};
    g.v = {g.s * width, g.head, width, (attributes.heads + attributes.kv_heads) * g.head};
  } else {
    const int64_t kv_width = attributes.kv_heads * g.head;
    for (const Tensor* t : {key, value})
      if (t->type() != query.type() || t->shape() != Shape{g.batch, g.s, kv_width})
        Fail(ErrorCode::kInvalidArgument, node, ": key / value is ", *t, ", expected ", DataTypeName(query.type()), " [",
             g.batch, ", ", g.s, ", ", kv_width, "]");
    g.k = g.v = {g.s * kv_width, g.head, kv_width, 0};
  }
  if ((past_key == nullptr) != (past_value == nullptr))
    Fail(ErrorCode::kInvalidArgument, node, ": past_key and past_value come together");
  g.past_rows = past_key != nullptr && past_key->shape().rank() == 4 ? past_key->shape()[2] : 0;
  for (const Tensor* p : {past_key, past_value})
    if (p != nullptr && (p->type() != query.type() || p->shape() != Shape{g.batch, attributes.kv_heads, g.past_rows, g.head}))
      Fail(ErrorCode::kInvalidArgument, node, ": past_key / past_value is ", *p, ", expected [", g.batch, ", ",
           attributes.kv_heads, ", past, ", g.head, "]");
  if (seqlens.type() != DataType::kInt32 || seqlens.NumElements() != g.batch)
    Fail(ErrorCode::kInvalidArgument, node, ": seqlens_k is ", seqlens, ", expected int32 [", g.batch, "]");
  if (total_length < g.s)
    Fail(ErrorCode::kInvalidArgument, node, ": total_sequence_length ", total_length, " is shorter than the ", g.s,
         " new tokens");
  g.total = total_length;
  g.present_rows = std::max(g.past_rows, g.total);
  g.first_prompt = g.total == g.s;
  if (attributes.rotary) {
    if (cos == nullptr || sin == nullptr || cos->type() != query.type() || cos->shape() != sin->shape() ||
        cos->shape().rank() != 2 || cos->shape()[1] <= 0 || 2 * cos->shape()[1] > g.head)
      Fail(ErrorCode::kInvalidArgument, node, ": do_rotary needs cos_cache and sin_cache of the query's type, ",
           "[max_position, rotary_dim / 2] with rotary_dim <= ", g.head);
    g.rot = 2 * cos->shape()[1];
    g.rotary_rows = cos->shape()[0];
  }
  g.scale = attributes.has_scale ? attributes.scale : 1.0f / std::sqrt(static_cast<float>(g.head));
  return g;
}

}  // namespace tessera
