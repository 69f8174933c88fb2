#include "tessera/ep/rotary_geometry.h"

#include "tessera/status.h"

namespace tessera {

KernelDef RotaryEmbeddingKernelDef(bool contrib) {
  KernelDef def;
  def.op_type = "RotaryEmbedding";
  def.domain = contrib ? "com.microsoft" : "";
  def.since_version = contrib ? 1 : 23;
  def.input_types = {{0, {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}}};
  return def;
}

RotaryAttributes ReadRotaryAttributes(const Node& node) {
  RotaryAttributes a;
  a.contrib = node.domain == "com.microsoft";
  a.interleaved = node.GetInt("interleaved", 0) != 0;
  a.num_heads = node.GetInt("num_heads", 0);
  a.rotary_dim = node.GetInt("rotary_embedding_dim", 0);
  if (a.num_heads < 0 || a.rotary_dim < 0)
    Fail(ErrorCode::kInvalidModel, node, ": num_heads and rotary_embedding_dim must be >= 0");
  if (a.contrib && node.GetFloat("scale", 1.0f) != 1.0f)
    Fail(ErrorCode::kNotImplemented, node, ": attribute scale other than 1 is not supported");
  if (a.contrib && node.GetInt("is_packed_batching", 0) != 0)
    Fail(ErrorCode::kNotImplemented, node, ": is_packed_batching = 1 is not supported");
  return a;
}

RotaryInputs RotaryInputIndices(const RotaryAttributes& attributes) {
  return attributes.contrib ? RotaryInputs{2, 3, 1} : RotaryInputs{1, 2, 3};
}

RotaryGeometry MakeRotaryGeometry(const Node& node, const RotaryAttributes& attributes, const Tensor& x,
                                  const Tensor& cos, const Tensor& sin, const Tensor* positions) {
  const size_t rank = x.shape().rank();
  if (rank != 3 && rank != 4) Fail(ErrorCode::kInvalidArgument, node, ": X is ", x, ", expected rank 3 or 4");
  RotaryGeometry g;
  g.batch = x.shape()[0];
  if (rank == 4) {
    g.heads = x.shape()[1];
    g.seq = x.shape()[2];
    g.head_size = x.shape()[3];
    g.head_stride = g.seq * g.head_size;
    g.token_stride = g.head_size;
    g.batch_stride = g.heads * g.seq * g.head_size;
  } else {
    g.seq = x.shape()[1];
    const int64_t hidden = x.shape()[2];
    // The contrib op infers heads from the cache width when num_heads is absent (full rotation).
    g.heads = attributes.num_heads > 0
                  ? attributes.num_heads
                  : (attributes.contrib && cos.shape().rank() == 2 && cos.shape()[1] > 0 ? hidden / (2 * cos.shape()[1])
                                                                                         : 0);
    if (g.heads <= 0 || hidden % g.heads != 0)
      Fail(ErrorCode::kInvalidArgument, node, ": X is ", x, "; a 3-D X needs attribute num_heads dividing ", hidden);
    g.head_size = hidden / g.heads;
    g.head_stride = g.head_size;
    g.token_stride = hidden;
    g.batch_stride = g.seq * hidden;
  }
  g.rot = attributes.rotary_dim > 0 ? attributes.rotary_dim : g.head_size;
  if (g.rot > g.head_size || g.rot % 2 != 0)
    Fail(ErrorCode::kInvalidArgument, node, ": rotary_embedding_dim ", g.rot, " must be even and at most the head size ",
         g.head_size);
  const int64_t half = g.rot / 2;
  if (cos.type() != x.type() || sin.type() != x.type() || cos.shape() != sin.shape())
    Fail(ErrorCode::kInvalidArgument, node, ": cos_cache ", cos, " and sin_cache ", sin,
         " must match each other and have X's type ", DataTypeName(x.type()));
  if (cos.shape().rank() == 0 || cos.shape()[cos.shape().rank() - 1] != half)
    Fail(ErrorCode::kInvalidArgument, node, ": cos_cache is ", cos, ", expected a last dim of ", half,
         " (rotary_embedding_dim / 2)");
  if (positions != nullptr) {
    if (cos.shape().rank() != 2)
      Fail(ErrorCode::kInvalidArgument, node, ": with position_ids, cos_cache is ", cos, ", expected [max_position, ",
           half, "]");
    if (positions->type() != DataType::kInt64 && positions->type() != DataType::kInt32)
      Fail(ErrorCode::kInvalidArgument, node, ": position_ids is ", *positions, ", expected int64");
    g.max_position = cos.shape()[0];
    if (attributes.contrib && positions->NumElements() == 1) {
      g.positions = RotaryPositions::kFirstOnly;
    } else if (positions->shape().rank() == 2 && positions->shape()[0] == g.batch && positions->shape()[1] == g.seq) {
      g.positions = RotaryPositions::kPerToken;
    } else {
      Fail(ErrorCode::kInvalidArgument, node, ": position_ids is ", *positions, ", expected [", g.batch, ", ", g.seq,
           "]");
    }
  } else if (cos.shape().rank() != 3 || cos.shape()[0] != g.batch || cos.shape()[1] != g.seq) {
    Fail(ErrorCode::kInvalidArgument, node, ": without position_ids, cos_cache is ", cos, ", expected [", g.batch, ", ",
         g.seq, ", ", half, "]");
  }
  return g;
}

}  // namespace tessera
