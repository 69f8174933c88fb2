// The scaled dot-product attention the CPU EP's attention ops share (ai.onnx Attention, com.microsoft
// MultiHeadAttention and GroupQueryAttention): for every (batch b, query head h, query i),
//   scores[j] = scale * dot(Q[b, h, i], K[b, h / group, j]), mapped to softcap * tanh(scores / softcap) when softcap > 0,
//   scores[j] = bias(b, h, i, j, scores[j])   (the op's masks: returns the masked or biased score)
//   Y[b, h, i] = softmax(scores) V[b, h / group, :]
// over the `total` keys of K and V, with group = query heads / key-value heads. Operands are seen as [batch, heads,
// positions, features] through element strides (features contiguous). Arithmetic in float32 for every element type.
#pragma once

#include <dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/common/vector_math.h"
#include "tessera/ep/thread_pool.h"

namespace tessera::cpu {

struct HeadView {
  int64_t batch = 0, heads = 0, positions = 0, features = 0;
  int64_t sb = 0, sh = 0, sp = 0;  // element strides; features are contiguous
  int64_t Offset(int64_t b, int64_t h, int64_t p) const { return b * sb + h * sh + p * sp; }

  // A contiguous [batch, heads, positions, features] tensor.
  static HeadView Bnsh(int64_t batch, int64_t heads, int64_t positions, int64_t features) {
    return {batch, heads, positions, features, heads * positions * features, positions * features, features};
  }
  // A contiguous [batch, positions, heads * features] tensor (heads interleaved in the last dim).
  static HeadView Bshd(int64_t batch, int64_t heads, int64_t positions, int64_t features) {
    return {batch, heads, positions, features, positions * heads * features, features, heads * features};
  }
};

inline constexpr float kMaskedScore = -std::numeric_limits<float>::infinity();

// AttentionRows for float32 with several queries per head (prompts, encoders): two row-major GEMMs per block of
// queries (oneDNN's sgemm: scores = scale Q K^T, then Y = P V) around the row-wise softcap, bias and softmax. Keys from
// key_end(b, first, rows) on are masked for every query of the block [first, first + rows) of item b (causal masking),
// so the block's GEMMs stop there.
template <typename Bias, typename KeyEnd>
void AttentionRowsByGemm(const ThreadPool& pool, const float* q, const HeadView& vq, const float* k, const HeadView& vk,
                         const float* v, const HeadView& vv, float* y, const HeadView& vy, float scale, float softcap,
                         const Bias& bias, const KeyEnd& key_end) {
  const int64_t s_len = vq.positions, d = vq.features, dv = vv.features, total = vk.positions;
  const int64_t group = vq.heads / vk.heads;
  constexpr int64_t kBlock = 64;  // queries per GEMM: causal blocks stop early; the scores stay 256 KB per 1024 keys
  std::vector<float> scores(static_cast<size_t>(std::min(kBlock, s_len) * total));
  for (int64_t b = 0; b < vq.batch; ++b)
    for (int64_t h = 0; h < vq.heads; ++h) {
      const int64_t hk = h / group;
      for (int64_t first = 0; first < s_len; first += kBlock) {
        const int64_t rows = std::min(kBlock, s_len - first);
        const int64_t keys = std::clamp<int64_t>(key_end(b, first, rows), 1, total);
        dnnl_sgemm('N', 'T', rows, keys, d, scale, q + vq.Offset(b, h, first), vq.sp, k + vk.Offset(b, hk, 0), vk.sp,
                   0.0f, scores.data(), keys);
        pool.ParallelFor(rows, std::max<int64_t>(1, 8192 / keys), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            float* row = scores.data() + r * keys;
            float max = kMaskedScore;
            for (int64_t j = 0; j < keys; ++j) {
              float score = row[j];
              if (softcap > 0.0f) score = softcap * std::tanh(score / softcap);
              row[j] = score = bias(b, h, first + r, j, score);
              max = std::max(max, score);
            }
            for (int64_t j = 0; j < keys; ++j) row[j] = Exp(row[j] - max);  // branch-free: vectorizes
            float sum = 0.0f;
            for (int64_t j = 0; j < keys; ++j) sum += row[j];
            const float inverse = 1.0f / sum;
            for (int64_t j = 0; j < keys; ++j) row[j] *= inverse;
          }
        });
        dnnl_sgemm('N', 'N', rows, dv, keys, 1.0f, scores.data(), keys, v + vv.Offset(b, hk, 0), vv.sp, 0.0f,
                   y + vy.Offset(b, h, first), vy.sp);
      }
    }
}

// Y (through `vy`) from Q (`vq`, heads = query heads), K and V (`vk`, `vv`: key/value heads, `total` positions).
// `scores_out` (nullable) receives, per (b, h, i) row of `total`, the scores before `bias` (`probabilities` false)
// or the softmax probabilities (true). float32 without `scores_out` and with 8+ queries and keys goes through
// AttentionRowsByGemm; single queries (decoding), 16-bit types and the scores output take the row loop.
// `key_end` (optional): for item b's queries [first, first + rows), the keys from which every score is masked.
struct AllKeys {  // no limit: AttentionRowsByGemm clamps key_end to the keys there are
  int64_t operator()(int64_t, int64_t, int64_t) const { return std::numeric_limits<int64_t>::max(); }
};
template <typename T, typename Bias, typename KeyEnd = AllKeys>
void AttentionRows(const ThreadPool& pool, const T* q, const HeadView& vq, const T* k, const HeadView& vk, const T* v,
                   const HeadView& vv, T* y, const HeadView& vy, float scale, float softcap, const Bias& bias,
                   T* scores_out = nullptr, bool probabilities = false, const KeyEnd& key_end = AllKeys{}) {
  const int64_t batch = vq.batch, hq = vq.heads, s_len = vq.positions, d = vq.features, dv = vv.features;
  const int64_t total = vk.positions, group = hq / vk.heads;
  if constexpr (std::is_same_v<T, float>) {
    if (scores_out == nullptr && s_len >= 8 && total >= 8) {
      AttentionRowsByGemm(pool, q, vq, k, vk, v, vv, y, vy, scale, softcap, bias, key_end);
      return;
    }
  }
  pool.ParallelFor(batch * hq * s_len, std::max<int64_t>(1, 4096 / std::max<int64_t>(total * d, 1)),
                   [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(total)), acc(static_cast<size_t>(dv));
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t i = unit % s_len, h = (unit / s_len) % hq, b = unit / (s_len * hq), hk = h / group;
      const T* q_row = q + vq.Offset(b, h, i);
      float max = kMaskedScore;
      for (int64_t j = 0; j < total; ++j) {
        const T* k_row = k + vk.Offset(b, hk, j);
        float dot = 0.0f;
        for (int64_t f = 0; f < d; ++f) dot += Load(q_row[f]) * Load(k_row[f]);
        float score = dot * scale;
        if (softcap > 0.0f) score = softcap * std::tanh(score / softcap);
        if (scores_out && !probabilities) scores_out[unit * total + j] = Store<T>(score);
        score = bias(b, h, i, j, score);
        row[static_cast<size_t>(j)] = score;
        max = std::max(max, score);
      }
      float sum = 0.0f;
      for (float& s : row) {
        s = std::exp(s - max);
        sum += s;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < total; ++j) {
        const float p = row[static_cast<size_t>(j)] / sum;
        if (scores_out && probabilities) scores_out[unit * total + j] = Store<T>(p);
        const T* v_row = v + vv.Offset(b, hk, j);
        for (int64_t f = 0; f < dv; ++f) acc[static_cast<size_t>(f)] += p * Load(v_row[f]);
      }
      T* y_row = y + vy.Offset(b, h, i);
      for (int64_t f = 0; f < dv; ++f) y_row[f] = Store<T>(acc[static_cast<size_t>(f)]);
    }
  });
}

// dst [B, H, P + L, F] (contiguous) = past [B, H, P, F] (nullable) then `x` seen through `view` ([B, H, L, F]).
template <typename T>
void ConcatenatePast(const T* past, int64_t past_positions, const T* x, const HeadView& view, T* dst) {
  const int64_t heads = view.heads, f = view.features, l = view.positions, total = past_positions + l;
  for (int64_t b = 0; b < view.batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      T* rows = dst + (b * heads + h) * total * f;
      if (past) std::copy_n(past + (b * heads + h) * past_positions * f, past_positions * f, rows);
      for (int64_t j = 0; j < l; ++j) std::copy_n(x + view.Offset(b, h, j), f, rows + (past_positions + j) * f);
    }
}

}  // namespace tessera::cpu
