#include "tessera/ep/mha_geometry.h"

#include <cmath>

#include "tessera/status.h"

namespace tessera {

MhaAttributes ReadMhaAttributes(const Node& node) {
  MhaAttributes a;
  a.heads = node.GetInt("num_heads", 0);
  a.has_scale = node.HasAttribute("scale");
  a.scale = node.GetFloat("scale", 0.0f);
  a.mask_filter = node.GetFloat("mask_filter_value", -10000.0f);
  a.unidirectional = node.GetInt("unidirectional", 0) != 0;
  if (a.heads <= 0) Fail(ErrorCode::kInvalidModel, node, ": num_heads must be positive, got ", a.heads);
  for (size_t i : {size_t{8}, size_t{9}})
    if (node.HasInput(i))
      Fail(ErrorCode::kNotImplemented, node, ": input ", i,
           i == 8 ? " (past_sequence_length, shared past/present buffers)" : " (cache_indirection, beam search)",
           " is not supported");
  if (node.outputs.size() > 3 && !node.outputs[3].empty())
    Fail(ErrorCode::kNotImplemented, node, ": output 3 (qk) is not supported");
  return a;
}

MhaGeometry MakeMhaGeometry(const Node& node, const MhaAttributes& attributes, const Tensor& query, const Tensor* key,
                            const Tensor* value, const Tensor* bias, const Tensor* padding, const Tensor* attention_bias,
                            const Tensor* past_key, const Tensor* past_value) {
  for (const Tensor* t : {key, value, bias, attention_bias, past_key, past_value})
    if (t != nullptr && t->type() != query.type())
      Fail(ErrorCode::kInvalidArgument, node, ": ", *t, " must have the query's type ", DataTypeName(query.type()));
  const auto bad = [&](const auto&... what) { Fail(ErrorCode::kInvalidArgument, node, ": ", what...); };
  const Shape& qs = query.shape();
  const int64_t n = attributes.heads;
  MhaGeometry g;
  g.heads = n;
  if (qs.rank() == 5) {  // packed [B, L, N, 3, H]
    if (key || value) bad("a packed query [B, L, N, 3, H] comes without key and value");
    if (qs[2] != n || qs[3] != 3) bad("packed query ", query, " must be [B, L, ", n, ", 3, H]");
    const int64_t b = qs[0], l = qs[1], h = qs[4], row = n * 3 * h;
    for (int64_t c = 0; c < 3; ++c) {
      MhaOperand& o = c == 0 ? g.q : c == 1 ? g.k : g.v;
      o = {0, c * h, b, n, l, h, l * row, 3 * h, row, c * n * h};
    }
  } else if (qs.rank() == 3) {
    if (qs[2] % n != 0) bad("query ", query, ": its last dim is not a multiple of num_heads ", n);
    const int64_t b = qs[0], s = qs[1], h = qs[2] / n;
    g.q = {0, 0, b, n, s, h, s * n * h, h, n * h, 0};
    if (key == nullptr) bad("key is required unless the query is packed [B, L, N, 3, H]");
    const Shape& ks = key->shape();
    if (ks.rank() == 5) {  // packed [B, L, N, 2, H]
      if (value) bad("a packed key [B, L, N, 2, H] comes without value");
      if (ks[0] != b || ks[2] != n || ks[3] != 2 || ks[4] != h)
        bad("packed key ", *key, " must be [", b, ", L, ", n, ", 2, ", h, "]");
      const int64_t l = ks[1], row = n * 2 * h;
      g.k = {1, 0, b, n, l, h, l * row, 2 * h, row, n * h};
      g.v = {1, h, b, n, l, h, l * row, 2 * h, row, 2 * n * h};
    } else if (ks.rank() == 3) {
      if (value == nullptr || value->shape().rank() != 3) bad("a key [B, L, D] needs a value [B, L, Dv]");
      const Shape& vs = value->shape();
      if (ks[0] != b || ks[2] != n * h || vs[0] != b || vs[1] != ks[1] || vs[2] % n != 0)
        bad("key ", *key, " / value ", *value, " do not match query ", query, " (", n, " heads)");
      const int64_t hv = vs[2] / n;
      g.k = {1, 0, b, n, ks[1], h, ks[1] * n * h, h, n * h, n * h};
      g.v = {2, 0, b, n, vs[1], hv, vs[1] * n * hv, hv, n * hv, 2 * n * h};
    } else if (ks.rank() == 4) {  // [B, N, L, H]: projected and in heads already (cross-attention caches)
      if (value == nullptr || value->shape().rank() != 4) bad("a key [B, N, L, H] needs a value [B, N, L, Hv]");
      const Shape& vs = value->shape();
      if (ks[0] != b || ks[1] != n || ks[3] != h || vs[0] != b || vs[1] != n || vs[2] != ks[2])
        bad("key ", *key, " / value ", *value, " must be [", b, ", ", n, ", L, ", h, " / Hv]");
      if (bias) Fail(ErrorCode::kNotImplemented, node, ": bias with key/value in [B, N, L, H]");
      if (past_key || past_value) bad("past_key/past_value cannot extend a key/value given in [B, N, L, H]");
      g.k = {1, 0, b, n, ks[2], h, n * ks[2] * h, ks[2] * h, h, 0};
      g.v = {2, 0, b, n, vs[2], vs[3], n * vs[2] * vs[3], vs[2] * vs[3], vs[3], 0};
    } else {
      bad("key ", *key, " must be [B, L, D], [B, L, N, 2, H] or [B, N, L, H]");
    }
  } else {
    bad("query ", query, " must be [B, S, D] or packed [B, L, N, 3, H]");
  }
  g.batch = g.q.batch;
  g.s = g.q.positions;
  g.head = g.q.features;
  g.v_head = g.v.features;
  g.l = g.k.positions;
  if (g.k.features != g.head) bad("key head size ", g.k.features, " differs from the query's ", g.head);
  if (bias && bias->NumElements() != 2 * n * g.head + n * g.v_head)
    bad("bias ", *bias, " must hold ", 2 * n * g.head + n * g.v_head, " values (D + D + Dv)");
  if ((past_key == nullptr) != (past_value == nullptr)) bad("past_key and past_value come together");
  g.past = past_key ? past_key->shape()[2] : 0;
  g.total = g.past + g.l;
  if (past_key && (past_key->shape() != Shape{g.batch, n, g.past, g.head} ||
                   past_value->shape() != Shape{g.batch, n, g.past, g.v_head}))
    bad("past_key ", *past_key, " / past_value ", *past_value, " must be [", g.batch, ", ", n, ", P, ", g.head, " / ",
        g.v_head, "]");
  if (padding) {
    if (padding->type() != DataType::kInt32) bad("key_padding_mask is ", *padding, ", expected int32");
    const Shape& ms = padding->shape();
    if (ms == Shape{g.batch}) {
      g.padding = MhaPadding::kLengths;
    } else if (ms == Shape{g.batch, g.total}) {
      g.padding = MhaPadding::kKeys;
    } else if (ms == Shape{g.batch, g.s, g.total}) {
      g.padding = MhaPadding::kPerQuery;
    } else if (ms == Shape{3 * g.batch + 2}) {
      Fail(ErrorCode::kNotImplemented, node, ": key_padding_mask ", *padding,
           " (the 3 * batch + 2 form) is not supported");
    } else {
      bad("key_padding_mask ", *padding, " must be [", g.batch, "], [", g.batch, ", ", g.total, "] or [", g.batch, ", ",
          g.s, ", ", g.total, "]");
    }
  }
  if (attention_bias) {
    const Shape& as = attention_bias->shape();
    if (as.rank() != 4 || (as[0] != 1 && as[0] != g.batch) || (as[1] != 1 && as[1] != n) || as[2] != g.s ||
        as[3] != g.total)
      bad("attention_bias ", *attention_bias, " must be [", g.batch, " or 1, ", n, " or 1, ", g.s, ", ", g.total, "]");
    g.attention_bias_sb = as[0] == 1 ? 0 : as[1] * g.s * g.total;
    g.attention_bias_sh = as[1] == 1 ? 0 : g.s * g.total;
  }
  g.scale = attributes.has_scale ? attributes.scale : 1.0f / std::sqrt(static_cast<float>(g.head));
  return g;
}

}  // namespace tessera
