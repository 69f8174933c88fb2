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

// One query (a decoding step) runs on attention_decode.cu's kernel; otherwise float16 on attention_flash.cu's kernel
// where its layout conditions hold, else on tensor cores (attention_mma.cu) where the device has them and the head
// sizes fit its shared memory, else on the FMA kernel (attention.cu). cudaErrorInvalidConfiguration when the head
// size needs more shared memory than a block has (beyond ~600 on either).
cudaError_t Attention(const AttentionArgs& args, cudaStream_t stream);

// The tensor-core kernel alone (float16 products, or float32 as three TF32 products), for Attention's dispatch
// and the tests that compare both kernels.
bool AttentionOnTensorCoresFits(const AttentionArgs& args);
cudaError_t AttentionOnTensorCores(const AttentionArgs& args, cudaStream_t stream);
// The float16 kernel with the softmax in registers (attention_flash.cu): head sizes multiples of 8 up to 128,
// contiguous features, K / V element strides multiples of 8 and 16-byte aligned. q_warps (query tiles of 16 per
// block) and splits (warps sharing one query tile's keys), q_warps x splits <= 8: 0 chooses by the grid's size;
// the bench names them to compare.
bool AttentionFlashFits(const AttentionArgs& args);
cudaError_t AttentionFlash(const AttentionArgs& args, cudaStream_t stream, int q_warps = 0, int splits = 0);
// The FMA kernel alone (float32 arithmetic throughout).
cudaError_t AttentionOnFmaUnits(const AttentionArgs& args, cudaStream_t stream);
// One query per (batch, head) over up to kMaxOneQueryKeys keys, head sizes up to kMaxOneQueryHead
// (attention_decode.cu): a decoding step. Float32 arithmetic throughout.
inline constexpr int kMaxOneQueryKeys = 4096;
inline constexpr int kMaxOneQueryHead = 128;
bool AttentionOneQueryFits(const AttentionArgs& args);
cudaError_t AttentionOneQuery(const AttentionArgs& args, cudaStream_t stream);

// ---- ai.onnx Attention's parts (onnx_attention.cu) ----------------------------------------------------------------
// (its present caches: RowsInHeads below)
// bias [dims[0], dims[1], dims[2], dims[3]] (contiguous, of `type`): 0, plus the mask's value at (b, h, i, j)
// (element strides mask_strides; bool: 0 where set, -inf where not; float: the value), -inf where j >= mask_keys
// (a mask shorter than the keys), and -inf where causal and j > i + past. mask may be null.
cudaError_t AttentionBias(ElementType type, const void* mask, bool bool_mask, const int64_t mask_strides[4],
                          int64_t mask_keys, bool causal, int64_t past, const int64_t dims[4], void* bias,
                          cudaStream_t stream);

// ---- com.microsoft GroupQueryAttention's parts (group_query_attention.cu) --------------------------------------------
// Semantics in providers/cpu/nn/group_query_attention.cc. Item b has length L_b = seqlens_k[b] + 1 (int32, read on the
// device) and its new rows start at past_b = first_prompt ? 0 : L_b - S.
struct GqaArgs {
  ElementType type = ElementType::kFloat;
  const int32_t* seqlens = nullptr;
  bool first_prompt = false;
  int64_t batch = 0, s = 0, kv_heads = 0, q_heads = 0, head = 0, present_rows = 0, past_rows = 0;
  // Rotary (rot = 0: none): cos / sin [rotary rows, rot / 2] of `type`, pairs interleaved or split in halves.
  const void* cos = nullptr;
  const void* sin = nullptr;
  int64_t rot = 0, rotary_rows = 0;
  bool interleaved = false;
};
// present [B, Nkv, R, H] (contiguous): item b's rows [0, past_b) from past ([B, Nkv, P, H], null when none), the new rows
// x (element strides `x_strides` along batch, head, position; features contiguous) at [past_b, past_b + S), rotated
// when `rotate`, zeros after them; with `in_place` (present is the past's buffer) only the new rows are written.
cudaError_t GqaPresent(const GqaArgs& args, const void* past, const void* x, const int64_t x_strides[3], bool rotate,
                       bool in_place, void* present, cudaStream_t stream);
// q_out [B, S, Nq, H] (contiguous) = the query (strides `q_strides` along batch, head, position) rotated at each
// item's positions past_b + s.
cudaError_t GqaRotateQuery(const GqaArgs& args, const void* q, const int64_t q_strides[3], void* q_out,
                           cudaStream_t stream);
// bias [B, S, R] of `type`: 0 where query s (position p = past_b + s) may read key j -- j <= p, j below the item's
// key count (L_b), and with window > 0 j > p - window -- else -inf.
cudaError_t GqaBias(const GqaArgs& args, int64_t window, void* bias, cudaStream_t stream);

// ---- com.microsoft MultiHeadAttention's parts (multi_head_attention.cu) ------------------------------------------------
// Semantics in providers/cpu/nn/multi_head_attention.cc.
// dst [B, N, P + L, F] (contiguous) = past [B, N, P, F] (null when P = 0) then x (element strides `x_strides` along
// batch, head, position; features contiguous) plus bias[h * F + f] (null: none), rounded to the element type. Also
// ai.onnx Attention's present caches (no bias).
cudaError_t RowsInHeads(ElementType type, const void* past, const void* x, const int64_t x_strides[3], const void* bias,
                        void* dst, int64_t batch, int64_t heads, int64_t past_rows, int64_t rows, int64_t features,
                        cudaStream_t stream);
struct MhaBiasArgs {
  ElementType type = ElementType::kFloat;
  int64_t batch = 0, heads = 0, s = 0, total = 0, past = 0;  // heads: 1 when nothing differs per head
  const void* attention_bias = nullptr;  // of `type`, element strides sb / sh over batch and heads
  int64_t attention_bias_sb = 0, attention_bias_sh = 0;
  const int32_t* padding = nullptr;  // key_padding_mask: lengths [B], or 0/1 per key [B, T] / [B, S, T]
  int padding_form = 0;               // 0 none, 1 lengths, 2 [B, T], 3 [B, S, T]
  bool unidirectional = false;
  float mask_filter = -10000.0f;      // added for each reason a key is masked
};
// bias [B, heads, S, T] of `type`: attention_bias + mask_filter where the key is padding + mask_filter where
// unidirectional and key j > query i + past.
cudaError_t MhaBias(const MhaBiasArgs& args, void* bias, cudaStream_t stream);

}  // namespace tessera::cuda::launch
