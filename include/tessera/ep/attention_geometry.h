// EP SDK: the geometry of ai.tessera::Attention (graph/passes/attention_fusion.h), shared by the kernels of every EP:
// the attributes read once per kernel, and per call the sizes and element strides of every operand along the
// canonical axes (batch, heads, sequence, head_size), with stride 0 where a dim of size 1 broadcasts.
#pragma once

#include <array>
#include <cstdint>

#include "tessera/ep/graph.h"
#include "tessera/ep/kernel.h"
#include "tessera/tensor.h"

namespace tessera {

// The KernelDef every EP registers its Attention kernel under: ai.tessera, since version 1, float32 and float16.
KernelDef AttentionKernelDef();

struct AttentionAttributes {
  std::array<int64_t, 4> q_axes{0, 1, 2, 3}, k_axes{0, 1, 3, 2}, v_axes{0, 1, 2, 3}, out_axes{0, 1, 2, 3};
  float scale = 1.0f;
  bool masked_rows_zero = false;
  // The packed form (graph/passes/packed_qkv_attention.h): > 0 when Q, K and V are views of one projection whose
  // heads axis holds 3 x packed_heads heads: Q the first packed_heads, K the next, V the last.
  int64_t packed_heads = 0;
};

// Reads and checks the attributes (each *_axes a permutation of 0..3; packed_heads >= 0 and not with the
// cache-update form's inputs); throws kInvalidArgument naming the node.
AttentionAttributes ReadAttentionAttributes(const Node& node);

struct AttentionGeometry {
  int64_t batch = 0, heads = 0, q_len = 0, k_len = 0, head_size = 0, v_head_size = 0;
  // Element strides along (batch, heads, position, feature); 0 where the operand broadcasts.
  std::array<int64_t, 4> q{}, k{}, v{}, out{};
  // Where each operand's first element is, in elements from its tensor's first (non-zero in the packed form).
  int64_t q_offset = 0, k_offset = 0, v_offset = 0;
  // Along (batch, heads, query position, key position); all 0 without a mask.
  std::array<int64_t, 4> mask{};
  bool has_mask = false;
  bool bool_mask = false;  // true: add 0 where set, -inf where not
  Shape output_shape;
};

// Checks the operands (rank 4, float or float16 of one type; a mask of that type or bool, broadcasting to
// [batch, heads, q_len, k_len]; matching head sizes and key lengths; in the packed form 3 x packed_heads heads in
// each operand) and computes the geometry; throws kInvalidArgument naming the node and the operand.
AttentionGeometry MakeAttentionGeometry(const Node& node, const AttentionAttributes& attributes, const Tensor& q,
                                        const Tensor& k, const Tensor& v, const Tensor* mask);

// The cache-update form (graph/passes/cache_update_fusion.h): inputs 4-5 update K, 6-7 update V, as
// ScatterElements(cache, indices, updates, axis) along the operand's sequence axis (k_axes[2] / v_axes[2]); outputs
// 1 and 2 are the updated caches.
inline constexpr size_t kKeyIndicesInput = 4, kValueIndicesInput = 6;
// Whether the node's kernel updates the cache read at `operand` (1: K, 2: V): its indices or updates input is given.
bool UpdatesCache(const KernelContext& ctx, size_t operand);
// Checks one update: int32/int64 indices and updates of one rank-4 shape, updates of the cache's type, no dim but
// the axis larger than the cache's; throws kInvalidArgument naming the node and `what` ("K" / "V").
void CheckCacheUpdate(const Node& node, const char* what, const Tensor& cache, const Tensor& indices,
                      const Tensor& updates, int64_t axis);
// The element of `indices` at flat position i, negative values counted from the end of `axis_dim`; throws
// kInvalidArgument naming the node when it falls outside [0, axis_dim).
int64_t CacheIndex(const Node& node, const Tensor& indices, int64_t i, int64_t axis_dim);

}  // namespace tessera
