// EP SDK: the geometry of com.microsoft MultiHeadAttention, shared by the kernels of every EP: the attributes, the
// operand forms (separate, packed Q/K/V or K/V, keys and values already in heads), the checks of every input and the
// element strides of Q, K and V. Semantics in providers/cpu/nn/multi_head_attention.cc.
#pragma once

#include <cstdint>

#include "tessera/ep/graph.h"
#include "tessera/tensor.h"

namespace tessera {

struct MhaAttributes {
  int64_t heads = 0;
  bool has_scale = false;
  float scale = 0.0f;
  float mask_filter = -10000.0f;  // mask_filter_value: added to the scores of masked keys
  bool unidirectional = false;
};

// Reads and checks the attributes; refuses, naming them, past_sequence_length and cache_indirection (inputs 8-9) and
// the qk output.
MhaAttributes ReadMhaAttributes(const Node& node);

// One operand seen as [batch, heads, positions, features]: which input tensor holds it (0 query, 1 key, 2 value), the
// element offset of its first feature there, its element strides, and where its bias starts in the bias input.
struct MhaOperand {
  int input = 0;
  int64_t element_offset = 0;
  int64_t batch = 0, heads = 0, positions = 0, features = 0;
  int64_t sb = 0, sh = 0, sp = 0;
  int64_t bias_offset = 0;
};

enum class MhaPadding { kNone, kLengths, kKeys, kPerQuery };  // key_padding_mask [B], [B, T], [B, S, T]

struct MhaGeometry {
  MhaOperand q, k, v;
  int64_t batch = 0, heads = 0, s = 0, l = 0, head = 0, v_head = 0, past = 0, total = 0;
  MhaPadding padding = MhaPadding::kNone;
  int64_t attention_bias_sb = 0, attention_bias_sh = 0;  // element strides of attention_bias over batch and heads
  float scale = 1.0f;                                     // resolved: the attribute or 1/sqrt(head)
};

// Checks the inputs (one float type; the operand forms; bias of D + D + Dv values; key_padding_mask int32 [B], [B, T]
// or [B, S, T] (the 3B + 2 form is refused); attention_bias [B or 1, N or 1, S, T]; past_key / past_value
// [B, N, P, H / Hv], not with keys already in heads) and computes the geometry; throws naming the node.
MhaGeometry MakeMhaGeometry(const Node& node, const MhaAttributes& attributes, const Tensor& query, const Tensor* key,
                            const Tensor* value, const Tensor* bias, const Tensor* padding, const Tensor* attention_bias,
                            const Tensor* past_key, const Tensor* past_value);

}  // namespace tessera
