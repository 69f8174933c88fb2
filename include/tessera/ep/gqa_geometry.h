// EP SDK: the geometry of com.microsoft GroupQueryAttention, shared by the kernels of every EP: the attributes, the
// checks of the operands' types and shapes, and the element strides of Q and of the new K / V rows (separate or
// packed). Semantics in providers/cpu/nn/group_query_attention.cc. Each item's length (seqlens_k's values) is the
// kernel's business: a host kernel checks it against the cache, a device kernel reads it where it lives.
#pragma once

#include <cstdint>

#include "tessera/ep/graph.h"
#include "tessera/tensor.h"

namespace tessera {

struct GqaAttributes {
  int64_t heads = 0, kv_heads = 0;
  int64_t window = -1;  // local_window_size (<= 0: none)
  bool rotary = false, interleaved = false;
  bool has_scale = false;
  float scale = 0.0f, softcap = 0.0f;
};

// Reads and checks the attributes (num_heads a positive multiple of kv_num_heads); refuses, naming them, what no EP
// implements: smooth_softmax, qk_output, and the position_ids / attention_bias / head_sink inputs (9-11).
GqaAttributes ReadGqaAttributes(const Node& node);

// Element strides of one operand along (batch, head, position); features are contiguous.
struct GqaRows {
  int64_t batch = 0, head = 0, position = 0;
  int64_t element_offset = 0;  // from the start of its tensor (packed QKV: K and V follow Q in each row)
};

struct GqaGeometry {
  int64_t batch = 0, s = 0, head = 0;
  bool packed = false;
  GqaRows q, k, v;         // k and v in the query tensor when packed
  int64_t past_rows = 0;   // the past inputs' sequence length (0: none)
  int64_t total = 0;       // total_sequence_length
  int64_t present_rows = 0;  // max(past_rows, total)
  bool first_prompt = false;  // total == s: every item starts at position 0
  int64_t rot = 0;            // rotary dim (do_rotary), 2 * cos_cache's last dim
  int64_t rotary_rows = 0;    // cos_cache's rows
  float scale = 1.0f;         // resolved: the attribute or 1/sqrt(head)
};

// Checks query / key / value / past (one float type, [B, S, ...] and [B, Nkv, P, H]), seqlens_k (int32 [B]), the
// caches with do_rotary (query's type, [rows, rot / 2], rot <= head) and computes the geometry. `total_length` is
// total_sequence_length's value (the kernel reads the scalar where it is). Throws kInvalidArgument naming the node.
GqaGeometry MakeGqaGeometry(const Node& node, const GqaAttributes& attributes, const Tensor& query, const Tensor* key,
                            const Tensor* value, const Tensor* past_key, const Tensor* past_value, const Tensor& seqlens,
                            int64_t total_length, const Tensor* cos, const Tensor* sin);

}  // namespace tessera
