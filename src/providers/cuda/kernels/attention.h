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
  // The cache-update form's rows, written by the one-query kernel before it reads K / V (AttentionOneQuery only;
  // null updates: none). Each block writes the updates of its own (batch, head), so K / V must not broadcast.
  struct CacheUpdate {
    const void* indices = nullptr;
    bool int64_indices = true;
    const void* updates = nullptr;
    int64_t dims[4] = {};     // the updates' (and indices') dims along (batch, heads, row, feature)
    int64_t strides[4] = {};  // their element strides along those
  } k_update, v_update;
};

// One query (a decoding step) runs on attention_decode.cu's kernel; otherwise on tensor cores (attention_mma.cu)
// where the device has them and the head sizes fit its shared memory, else on the FMA kernel (attention.cu). cudaErrorInvalidConfiguration when the head size needs more shared
// memory than a block has (beyond ~600 on either).
cudaError_t Attention(const AttentionArgs& args, cudaStream_t stream);

// The tensor-core kernel alone (float16 products, or float32 as three TF32 products), for Attention's dispatch
// and the tests that compare both kernels.
bool AttentionOnTensorCoresFits(const AttentionArgs& args);
cudaError_t AttentionOnTensorCores(const AttentionArgs& args, cudaStream_t stream);
// The FMA kernel alone (float32 arithmetic throughout).
cudaError_t AttentionOnFmaUnits(const AttentionArgs& args, cudaStream_t stream);
// One query per (batch, head) over up to kMaxOneQueryKeys keys, head sizes up to kMaxOneQueryHead
// (attention_decode.cu): a decoding step. Float32 arithmetic throughout.
inline constexpr int kMaxOneQueryKeys = 4096;
inline constexpr int kMaxOneQueryHead = 128;
bool AttentionOneQueryFits(const AttentionArgs& args);
cudaError_t AttentionOneQuery(const AttentionArgs& args, cudaStream_t stream);

}  // namespace tessera::cuda::launch
