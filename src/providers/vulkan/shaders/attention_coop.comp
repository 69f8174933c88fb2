#version 450
// ai.tessera::Attention (graph/passes/attention_fusion.h) in float16 on cooperative matrices, for one batch entry:
// out = softmax(scale * Q.K^T + mask) . V per head. attention_kernels.cc takes it on devices with
// VK_NV_cooperative_matrix (PhysicalDeviceInfo::coop_f16: subgroups of 32) where every row of Q, K and V is a
// contiguous run of whole 16-byte words (feature stride 1, head sizes and the other strides multiples of 8, aligned
// addresses); other layouts and float32 take attention.comp.
//
// One workgroup (one subgroup of 32) per 16 query rows of one head (x: row block, y: head). Q's 16 rows are staged
// once; keys are taken KEYS at a time: the chunk's rows of K and V are loaded with 16-byte loads into registers one
// chunk ahead (the next chunk's loads are in flight while this one is multiplied) and staged in shared memory, then
//   S = Q . K^T            16 x KEYS on 16 x 16 x 16 cooperative matrices, float accumulators (K loaded column-major)
//   P = exp(scale * S + mask - running max)   per row by invocation pairs (row lane / 2, columns lane % 2 + 2 t),
//                          the running maximum and sum as an online softmax; P staged as float16 (values in [0, 1])
//   O = O * exp(old max - new max) + P . V    P . V on cooperative matrices, O in registers (float)
// and at the end O / sum is written through the output strides. MAX_HEAD (head sizes up to it, padded to 16 with
// zeros) and KEYS are compile-time: 64 / 32 or 128 / 16, both within 24 KB of shared memory (what coop_f16
// guarantees). A row whose scores are all -inf gives zeros with masked_rows_zero (flags bit 2), else NaN (softmax of
// -inf everywhere), as attention.comp. BOOL_MASK: the mask is bytes (add 0 where set, -inf where not), else float16.
#ifndef TYPE_F16
#error "attention_coop.comp is float16 only"
#endif
#include "common.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#ifdef BOOL_MASK
#extension GL_EXT_shader_8bit_storage : require
layout(buffer_reference, std430, buffer_reference_align = 1) buffer MBuf { uint8_t v[]; };
#else
#define MBuf TBuf
#endif
// Eight float16 values as one 16-byte word.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer WBuf { uvec4 v[]; };
layout(local_size_x = 32) in;
// attention.comp's push constants (attention_kernels.cc, AttentionPush), Q, K and V read as 16-byte words.
layout(push_constant) uniform Params {
  WBuf q; WBuf k; WBuf v; TBuf out_; MBuf mask;
  uint heads; uint q_len; uint k_len; uint head_size; uint v_head_size;
  uint q_h; uint q_s; uint q_d; uint k_h; uint k_s; uint k_d; uint v_h; uint v_s; uint v_d;
  uint o_h; uint o_s; uint o_d; uint m_h; uint m_q; uint m_k;
  float scale; uint flags;  // flags: 1 = mask, 2 = masked rows give zeros
} p;

// Row strides of the staged tiles (multiples of 8 halves / 4 floats: 16-byte aligned rows for the matrix loads and
// stores; the padding spreads rows over the shared-memory banks).
const uint kRow = MAX_HEAD + 8u;                                  // Qs, Ks, Vs (halves)
const uint kP = KEYS + 8u;                                        // Ps (halves)
const uint kF = (KEYS > MAX_HEAD ? KEYS : MAX_HEAD) + 4u;         // Fs (floats): S, then P . V
shared float16_t Qs[16u * kRow];
shared float16_t Ks[KEYS * kRow];
shared float16_t Vs[KEYS * kRow];
shared float Fs[16u * kF];
shared float16_t Ps[16u * kP];
// 16-byte words of a KEYS-row chunk each invocation loads (of K, and of V).
const uint kWords = KEYS * MAX_HEAD / 8u / 32u;

// Invocation-strided words of rows first .. first + rows (of `valid`) of an operand: word e = lane + 32 i is row
// e / words_per_row, features 8 (e % words_per_row) ..; zeros past `valid` rows and past `features`.
void LoadRows(WBuf buf, uint base, uint row_stride, uint first, uint rows, uint valid, uint words_per_row,
              uint features, out uvec4 w[kWords]) {
  for (uint i = 0u; i < kWords; ++i) {
    uint e = gl_LocalInvocationID.x + 32u * i;
    uint r = e / words_per_row, c = e - r * words_per_row;
    bool in_range = r < rows && first + r < valid && c * 8u < features;
    w[i] = in_range ? buf.v[(base + (first + r) * row_stride + c * 8u) / 8u] : uvec4(0u);
  }
}

// Stores LoadRows' words into a staged tile of kRow-strided rows.
#define STAGE_ROWS(tile, w, rows, words_per_row)                           \
  for (uint i = 0u; i < kWords; ++i) {                                     \
    uint e = gl_LocalInvocationID.x + 32u * i;                             \
    uint r = e / (words_per_row), c = e - r * (words_per_row);             \
    if (r < (rows)) {                                                      \
      uint at = r * kRow + c * 8u;                                         \
      for (uint u = 0u; u < 4u; ++u) {                                     \
        f16vec2 pair = unpackFloat2x16(w[i][u]);                           \
        tile[at + 2u * u] = pair.x;                                        \
        tile[at + 2u * u + 1u] = pair.y;                                   \
      }                                                                    \
    }                                                                      \
  }

void main() {
  const float neg_inf = uintBitsToFloat(0xff800000u);
  uint lane = gl_LocalInvocationID.x;
  uint q0 = gl_WorkGroupID.x * 16u, h = gl_WorkGroupID.y;
  uint hs = p.head_size, vs = p.v_head_size;
  uint hs16 = (hs + 15u) & ~15u, vs16 = (vs + 15u) & ~15u;
  uint q_words = hs16 / 8u, v_words = vs16 / 8u;
  // This invocation's row of the softmax and the output, and its columns: half + 2 t.
  uint row = lane >> 1u, half_ = lane & 1u;
  uint qi = q0 + row;

  // Q's 16 rows take at most kWords words per invocation (KEYS >= 16); wk and wv then hold the next chunk of K, V.
  uvec4 wk[kWords], wv[kWords];
  LoadRows(p.q, h * p.q_h, p.q_s, q0, 16u, p.q_len, q_words, hs, wk);
  STAGE_ROWS(Qs, wk, 16u, q_words);
  LoadRows(p.k, h * p.k_h, p.k_s, 0u, KEYS, p.k_len, q_words, hs, wk);
  LoadRows(p.v, h * p.v_h, p.v_s, 0u, KEYS, p.k_len, v_words, vs, wv);

  float m = neg_inf, l = 0.0;
  float o[MAX_HEAD / 2u];
  for (uint t = 0u; t < MAX_HEAD / 2u; ++t) o[t] = 0.0;
  for (uint j0 = 0u; j0 < p.k_len; j0 += KEYS) {
    barrier();  // the previous chunk's tiles have been read
    STAGE_ROWS(Ks, wk, KEYS, q_words);
    STAGE_ROWS(Vs, wv, KEYS, v_words);
    barrier();
    if (j0 + KEYS < p.k_len) {
      LoadRows(p.k, h * p.k_h, p.k_s, j0 + KEYS, KEYS, p.k_len, q_words, hs, wk);
      LoadRows(p.v, h * p.v_h, p.v_s, j0 + KEYS, KEYS, p.k_len, v_words, vs, wv);
    }
    // S = Q . K^T: K's staged rows are the columns of K^T (a column-major load).
    for (uint n = 0u; n < KEYS / 16u; ++n) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      for (uint d = 0u; d < hs16; d += 16u) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;
        coopMatLoadNV(a, Qs, d, kRow, false);
        coopMatLoadNV(b, Ks, n * 16u * kRow + d, kRow, true);
        acc = coopMatMulAddNV(a, b, acc);
      }
      coopMatStoreNV(acc, Fs, n * 16u, kF, false);
    }
    barrier();
    // The online softmax of this chunk's scores, row by invocation pairs.
    uint valid = min(KEYS, p.k_len - j0);
    float s[KEYS / 2u];
    float chunk_max = neg_inf;
    for (uint t = 0u; t < KEYS / 2u; ++t) {
      uint c = half_ + 2u * t;
      float x = neg_inf;
      if (c < valid) {
        x = p.scale * Fs[row * kF + c];
        if ((p.flags & 1u) != 0u && qi < p.q_len) {
          uint mi = h * p.m_h + qi * p.m_q + (j0 + c) * p.m_k;
#ifdef BOOL_MASK
          if (uint(p.mask.v[mi]) == 0u) x = neg_inf;
#else
          x += LOAD(p.mask, mi);
#endif
        }
      }
      s[t] = x;
      chunk_max = max(chunk_max, x);
    }
    chunk_max = max(chunk_max, subgroupShuffleXor(chunk_max, 1u));
    float m_new = max(m, chunk_max);
    float sum = 0.0;
    // exp(-inf - -inf) is NaN: while every score of the row so far is -inf, nothing is accumulated.
    for (uint t = 0u; t < KEYS / 2u; ++t) {
      float e = m_new == neg_inf ? 0.0 : exp(s[t] - m_new);
      Ps[row * kP + half_ + 2u * t] = float16_t(e);
      sum += e;
    }
    sum += subgroupShuffleXor(sum, 1u);
    float rescale = m == neg_inf ? 0.0 : exp(m - m_new);
    l = l * rescale + sum;
    m = m_new;
    barrier();  // P is staged; the scores in Fs have been read
    for (uint n = 0u; n < vs16 / 16u; ++n) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      for (uint kk = 0u; kk < KEYS; kk += 16u) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;
        coopMatLoadNV(a, Ps, kk, kP, false);
        coopMatLoadNV(b, Vs, kk * kRow + n * 16u, kRow, false);
        acc = coopMatMulAddNV(a, b, acc);
      }
      coopMatStoreNV(acc, Fs, n * 16u, kF, false);
    }
    barrier();
    for (uint t = 0u; t < MAX_HEAD / 2u; ++t) {
      uint c = half_ + 2u * t;
      if (c < vs16) o[t] = o[t] * rescale + Fs[row * kF + c];
    }
  }
  if (qi >= p.q_len) return;
  bool all_masked = m == neg_inf;
  for (uint t = 0u; t < MAX_HEAD / 2u; ++t) {
    uint c = half_ + 2u * t;
    if (c >= vs) break;
    float value = all_masked ? ((p.flags & 2u) != 0u ? 0.0 : uintBitsToFloat(0x7fc00000u)) : o[t] / l;
    STORE(p.out_, h * p.o_h + qi * p.o_s + c * p.o_d, value);
  }
}
