#include "tessera/ep/attention_geometry.h"

#include <algorithm>
#include <string>

#include "tessera/status.h"

namespace tessera {

namespace {

std::array<int64_t, 4> ReadAxes(const Node& node, const char* name, std::array<int64_t, 4> fallback) {
  if (!node.HasAttribute(name)) return fallback;
  const std::vector<int64_t> axes = node.GetInts(name);
  std::array<bool, 4> seen{};
  bool valid = axes.size() == 4;
  for (size_t i = 0; valid && i < 4; ++i) {
    valid = axes[i] >= 0 && axes[i] < 4 && !seen[axes[i]];
    if (valid) seen[axes[i]] = true;
  }
  if (!valid)
    Fail(ErrorCode::kInvalidArgument, node, ": attribute ", name, " must be a permutation of 0, 1, 2, 3");
  return {axes[0], axes[1], axes[2], axes[3]};
}

// The sizes and contiguous element strides of `t` along the canonical axes `axes` names.
struct Canonical {
  std::array<int64_t, 4> dims{}, strides{};
};

Canonical ToCanonical(const Node& node, const Tensor& t, const std::array<int64_t, 4>& axes, const char* what) {
  if (t.shape().rank() != 4)
    Fail(ErrorCode::kInvalidArgument, node, ": ", what, " is ", t, ", expected rank 4");
  std::array<int64_t, 4> contiguous{};
  int64_t stride = 1;
  for (size_t d = 4; d-- > 0;) {
    contiguous[d] = stride;
    stride *= t.shape()[d];
  }
  Canonical c;
  for (size_t i = 0; i < 4; ++i) {
    c.dims[i] = t.shape()[axes[i]];
    c.strides[i] = contiguous[axes[i]];
  }
  return c;
}

// Size of a broadcast dim: all sizes are equal or 1.
int64_t Broadcast(const Node& node, std::initializer_list<int64_t> sizes, const char* axis) {
  int64_t out = 1;
  for (int64_t s : sizes) {
    if (s == 1 || s == out) continue;
    if (out != 1)
      Fail(ErrorCode::kInvalidArgument, node, ": the ", axis, " dims of the operands (", out, " and ", s,
           ") do not broadcast");
    out = s;
  }
  return out;
}

int64_t StrideOr0(int64_t dim, int64_t stride) { return dim == 1 ? 0 : stride; }

}  // namespace

AttentionAttributes ReadAttentionAttributes(const Node& node) {
  AttentionAttributes a;
  a.q_axes = ReadAxes(node, "q_axes", a.q_axes);
  a.k_axes = ReadAxes(node, "k_axes", a.k_axes);
  a.v_axes = ReadAxes(node, "v_axes", a.v_axes);
  a.out_axes = ReadAxes(node, "out_axes", a.out_axes);
  a.scale = node.GetFloat("scale", 1.0f);
  a.masked_rows_zero = node.GetInt("masked_rows_zero", 0) != 0;
  a.packed_heads = node.GetInt("packed_heads", 0);
  if (a.packed_heads < 0)
    Fail(ErrorCode::kInvalidArgument, node, ": attribute packed_heads is ", a.packed_heads, ", expected >= 0");
  if (a.packed_heads > 0 && node.inputs.size() > kKeyIndicesInput)
    Fail(ErrorCode::kInvalidArgument, node, ": attribute packed_heads does not combine with cache updates");
  return a;
}

KernelDef AttentionKernelDef() {
  KernelDef def;
  def.op_type = "Attention";
  def.domain = "ai.tessera";
  def.since_version = 1;
  def.input_types = {{0, {DataType::kFloat, DataType::kFloat16}}};
  def.in_place_inputs = {-1, 1, 2};  // the updated caches over K and V (cache-update form)
  return def;
}

AttentionGeometry MakeAttentionGeometry(const Node& node, const AttentionAttributes& attributes, const Tensor& q,
                                        const Tensor& k, const Tensor& v, const Tensor* mask) {
  const DataType type = q.type();
  if (type != DataType::kFloat && type != DataType::kFloat16)
    Fail(ErrorCode::kInvalidArgument, node, ": Q is ", q, ", expected float or float16");
  if (k.type() != type || v.type() != type)
    Fail(ErrorCode::kInvalidArgument, node, ": K (", k, ") and V (", v, ") must have Q's type ", DataTypeName(type));
  Canonical cq = ToCanonical(node, q, attributes.q_axes, "Q");
  Canonical ck = ToCanonical(node, k, attributes.k_axes, "K");
  Canonical cv = ToCanonical(node, v, attributes.v_axes, "V");
  AttentionGeometry g;
  if (const int64_t heads = attributes.packed_heads; heads > 0) {
    // Q, K and V take consecutive thirds of their heads axis.
    const std::pair<Canonical*, const char*> operands[3] = {{&cq, "Q"}, {&ck, "K"}, {&cv, "V"}};
    for (const auto& [c, what] : operands)
      if (c->dims[1] != 3 * heads)
        Fail(ErrorCode::kInvalidArgument, node, ": ", what, " has ", c->dims[1], " heads, expected 3 x packed_heads = ",
             3 * heads);
    g.k_offset = heads * ck.strides[1];
    g.v_offset = 2 * heads * cv.strides[1];
    cq.dims[1] = ck.dims[1] = cv.dims[1] = heads;
  }
  if (cq.dims[3] != ck.dims[3])
    Fail(ErrorCode::kInvalidArgument, node, ": Q's head size ", cq.dims[3], " differs from K's ", ck.dims[3]);
  if (ck.dims[2] != cv.dims[2])
    Fail(ErrorCode::kInvalidArgument, node, ": K has ", ck.dims[2], " positions but V has ", cv.dims[2]);
  g.q_len = cq.dims[2];
  g.k_len = ck.dims[2];
  g.head_size = cq.dims[3];
  g.v_head_size = cv.dims[3];
  int64_t mask_dims[4] = {1, 1, 1, 1};
  int64_t mask_strides[4] = {0, 0, 0, 0};
  if (mask != nullptr) {
    if (mask->type() != type && mask->type() != DataType::kBool)
      Fail(ErrorCode::kInvalidArgument, node, ": the mask is ", *mask, ", expected ", DataTypeName(type), " or bool");
    const size_t rank = mask->shape().rank();
    if (rank > 4) Fail(ErrorCode::kInvalidArgument, node, ": the mask is ", *mask, ", expected rank 4 at most");
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      mask_dims[4 - rank + d] = mask->shape()[d];
      mask_strides[4 - rank + d] = stride;
      stride *= mask->shape()[d];
    }
    g.has_mask = true;
    g.bool_mask = mask->type() == DataType::kBool;
  }
  g.batch = Broadcast(node, {cq.dims[0], ck.dims[0], cv.dims[0], mask_dims[0]}, "batch");
  g.heads = Broadcast(node, {cq.dims[1], ck.dims[1], cv.dims[1], mask_dims[1]}, "head");
  if ((mask_dims[2] != 1 && mask_dims[2] != g.q_len) || (mask_dims[3] != 1 && mask_dims[3] != g.k_len))
    Fail(ErrorCode::kInvalidArgument, node, ": the mask ", *mask, " does not broadcast to [", g.batch, ",", g.heads,
         ",", g.q_len, ",", g.k_len, "]");
  for (size_t i = 0; i < 4; ++i) {
    g.q[i] = StrideOr0(cq.dims[i], cq.strides[i]);
    g.k[i] = StrideOr0(ck.dims[i], ck.strides[i]);
    g.v[i] = StrideOr0(cv.dims[i], cv.strides[i]);
    g.mask[i] = StrideOr0(mask_dims[i], mask_strides[i]);
  }
  const std::array<int64_t, 4> canonical_out = {g.batch, g.heads, g.q_len, g.v_head_size};
  std::vector<int64_t> out_dims(4);
  for (size_t i = 0; i < 4; ++i) out_dims[attributes.out_axes[i]] = canonical_out[i];
  g.output_shape = Shape(out_dims);
  std::array<int64_t, 4> contiguous{};
  int64_t stride = 1;
  for (size_t d = 4; d-- > 0;) {
    contiguous[d] = stride;
    stride *= out_dims[d];
  }
  for (size_t i = 0; i < 4; ++i) g.out[i] = contiguous[attributes.out_axes[i]];
  return g;
}

bool UpdatesCache(const KernelContext& ctx, size_t operand) {
  const size_t first = operand == 1 ? kKeyIndicesInput : kValueIndicesInput;
  return ctx.HasInput(first) || ctx.HasInput(first + 1);
}

void CheckCacheUpdate(const Node& node, const char* what, const Tensor& cache, const Tensor& indices,
                      const Tensor& updates, int64_t axis) {
  if (indices.type() != DataType::kInt64 && indices.type() != DataType::kInt32)
    Fail(ErrorCode::kInvalidArgument, node, ": the indices updating ", what, " are ", indices, ", expected int64 or int32");
  if (updates.type() != cache.type())
    Fail(ErrorCode::kInvalidArgument, node, ": the updates of ", what, " are ", updates, ", expected ",
         DataTypeName(cache.type()), " as ", what);
  if (indices.shape() != updates.shape() || indices.shape().rank() != 4 || cache.shape().rank() != 4)
    Fail(ErrorCode::kInvalidArgument, node, ": the indices ", indices, " and updates ", updates, " of ", what, " (",
         cache, ") must have one rank-4 shape");
  for (size_t d = 0; d < 4; ++d)
    if (static_cast<int64_t>(d) != axis && indices.shape()[d] > cache.shape()[d])
      Fail(ErrorCode::kInvalidArgument, node, ": the updates ", updates, " exceed ", what, " ", cache, " along axis ", d);
}

int64_t CacheIndex(const Node& node, const Tensor& indices, int64_t i, int64_t axis_dim) {
  int64_t at = indices.type() == DataType::kInt64 ? indices.Data<int64_t>()[i] : indices.Data<int32_t>()[i];
  if (at < -axis_dim || at >= axis_dim)
    Fail(ErrorCode::kInvalidArgument, node, ": cache index ", at, " is outside [", -axis_dim, ", ", axis_dim, ")");
  return at < 0 ? at + axis_dim : at;
}

}  // namespace tessera
