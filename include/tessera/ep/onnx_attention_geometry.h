// EP SDK: the geometry of ai.onnx Attention (opsets 23-24), shared by the kernels of every EP: the attributes, the
// checks of the operands and the element strides of each along (batch, heads, position, feature).
//
// Semantics: Q [B, Hq, S, D] or [B, S, Hq*D]; K [B, Hkv, L, D] or [B, L, Hkv*D]; V [B, Hkv, L, Dv] or
// [B, L, Hkv*Dv] (3-D operands need attributes q_num_heads and kv_num_heads); past_key / past_value
// [B, Hkv, P, D / Dv]. present_key / value = concat(past, K / V) along the sequence ([B, Hkv, T, D / Dv], T = P + L
// keys); query head h reads key/value head h / (Hq / Hkv). scores = scale * Q K^T (scale defaults to 1/sqrt(D));
// softcap > 0 maps them to softcap * tanh(scores / softcap); then the bias: attn_mask (bool: false masks; float:
// added; broadcast to [B, Hq, S, T]; a last dim shorter than T is padded with masked entries) and, with is_causal,
// -inf where key j > query i + P. Y = softmax(scores + bias) V in Q's layout (3-D: [B, S, Hq*Dv]).
// qk_matmul_output (output 3) is the scores (qk_matmul_output_mode 0) or the probabilities (3). A row with every key
// masked gives NaN, as the spec's softmax does. Attention-24's nonpad_kv_seqlen (input 6) is refused.
#pragma once

#include <array>
#include <cstdint>

#include "tessera/ep/graph.h"
#include "tessera/tensor.h"

namespace tessera {

struct OnnxAttentionAttributes {
  bool is_causal = false;
  int64_t q_heads = 0, kv_heads = 0;  // q_num_heads / kv_num_heads (0: absent)
  int64_t qk_output_mode = 0;         // 0: scores, 3: probabilities
  bool has_scale = false;
  float scale = 0.0f;
  float softcap = 0.0f;
};

// Reads and checks the attributes (qk_matmul_output_mode 0 or 3; no input 6); throws naming the node.
OnnxAttentionAttributes ReadOnnxAttentionAttributes(const Node& node);

// One operand's sizes and element strides (features are contiguous).
struct HeadLayout {
  int64_t batch = 0, heads = 0, positions = 0, features = 0;
  int64_t batch_stride = 0, head_stride = 0, position_stride = 0;
  int64_t Offset(int64_t b, int64_t h, int64_t p) const { return b * batch_stride + h * head_stride + p * position_stride; }
  // A contiguous [batch, heads, positions, features] tensor.
  static HeadLayout Bnsh(int64_t batch, int64_t heads, int64_t positions, int64_t features);
  // A contiguous [batch, positions, heads * features] tensor.
  static HeadLayout Bshd(int64_t batch, int64_t heads, int64_t positions, int64_t features);
};

struct OnnxAttentionGeometry {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, new_len = 0, past = 0, total = 0;
  int64_t head_size = 0, v_head_size = 0;
  HeadLayout q, k, v, y;  // k and v: this call's keys and values as given
  Shape y_shape, present_k_shape, present_v_shape, scores_shape;
  float scale = 1.0f;  // resolved: the attribute or 1/sqrt(D)
  // The mask aligned to the right of [B, Hq, S, T]: its dims (1 where it broadcasts; the last may be < T) and element
  // strides (0 where it broadcasts).
  bool has_mask = false, bool_mask = false;
  std::array<int64_t, 4> mask_dims{1, 1, 1, 1}, mask_strides{0, 0, 0, 0};
};

// Checks the operands (one rank for Q, K, V; one type for them and the past; batch, heads, head sizes and lengths
// consistent; Hq a multiple of Hkv; past_key and past_value together and [B, Hkv, P, D / Dv]; a mask of Q's type or
// bool, rank 2-4, broadcasting to [B, Hq, S, <= T]) and computes the geometry; throws kInvalidArgument naming the
// node and the operand.
OnnxAttentionGeometry MakeOnnxAttentionGeometry(const Node& node, const OnnxAttentionAttributes& attributes,
                                                const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                                                const Tensor* past_k, const Tensor* past_v);

}  // namespace tessera
