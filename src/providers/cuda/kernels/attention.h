// Launcher of the ai.tessera::Attention device kernel (attention.cu), kept out of the shared launch.h: plain
// types only, as there. Semantics in graph/passes/attention_fusion.h.
#pragma once

#include "providers/cuda/kernels/launch.h"

namespace tessera::cuda::launch {

// Element strides along (batch, heads, position, feature) for q, k, v and out, along (batch, heads, query,
// key) for the mask; 0 where an operand broadcasts.
struct AttentionArgs {
  ElementType type = ElementType::kFloat;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;  // null, of `type`, or bool when bool_mask
  bool bool_mask = false;
  void* out = nullptr;
  int64_t batch = 0, heads = 0, q_len = 0, k_len = 0, head_size = 0, v_head_size = 0;
  int64_t q_strides[4] = {}, k_strides[4] = {}, v_strides[4] = {}, out_strides[4] = {}, mask_strides[4] = {};
  float scale = 1.0f;
  bool masked_rows_zero = false;
};

// cudaErrorInvalidConfiguration when the head size needs more shared memory than a block has (beyond ~600).
cudaError_t Attention(const AttentionArgs& args, cudaStream_t stream);

}  // namespace tessera::cuda::launch
