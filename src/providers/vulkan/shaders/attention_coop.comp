#version 450
// ai.tessera::Attention (graph/passes/attention_fusion.h) in float16 on cooperative matrices, for one batch entry:
// out = softmax(scale * Q.K^T + mask) . V per head. attention_kernels.cc takes it on devices with
// VK_NV_cooperative_matrix (PhysicalDeviceInfo::coop_f16: subgroups of 32) where every row of Q, K and V is a
// contiguous run of whole 16-byte words (feature stride 1, head sizes and the other strides multiples of 8, aligned
// addresses); other layouts and float32 take attention.comp.
//
// One workgroup of WARPS subgroups (of 32) per 16 query rows of one head (x: row block, y: head); the subgroups share
// the keys: subgroup w takes chunks w, w + WARPS, ... of KEYS keys, in tiles of its own, synchronized within the
// subgroup only. Q's 16 rows are staged once; each chunk's rows of K and V (and this invocation's mask entries) are
// loaded with 16-byte loads into registers one chunk ahead (the next chunk's loads are in flight while this one is
// multiplied) and staged in the subgroup's shared memory, then
//   S = Q . K^T            16 x KEYS on 16 x 16 x 16 cooperative matrices, float accumulators (K loaded column-major)
//   P = exp(scale * S + mask - running max)   per row by invocation pairs (row lane / 2, columns lane % 2 + 2 t),
//                          the running maximum and sum as an online softmax; P staged as float16 (values in [0, 1])
//   O = O * exp(old max - new max) + P . V    P . V on cooperative matrices, O in registers (float)
// and at the end the subgroups' (maximum, sum, O) are merged through shared memory and O / sum written through the
// output strides. MAX_HEAD (head sizes up to it, padded to 16 with zeros), KEYS and WARPS are compile-time: 64 / 16 /
// 4 (40.7 KB of shared memory) and 128 / 16 / 2 (39.5 KB). Four subgroups sharing the keys measured 1.76-1.79 ms
// for BERT-base s128 fp16 recorded on an H200 against 1.99-2.01 with one subgroup walking all keys 32 at a time
// (bench/results/gpu-2026-11-29-session34/). A row whose scores are all -inf gives zeros with masked_rows_zero
// (flags bit 2), else NaN (softmax of -inf everywhere), as attention.comp. BOOL_MASK: the mask is bytes (add 0 where
// set, -inf where not), else float16.
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
layout(local_size_x = WARPS * 32) in;
// attention.comp's push constants (attention_kernels.cc, AttentionPush), Q, K and V read as 16-byte words.
layout(push_constant) uniform Params {
  WBuf q; WBuf k; WBuf v; TBuf out_; MBuf mask;
  uint heads; uint q_len; uint k_len; uint head_size; uint v_head_size;
  uint q_h; uint q_s; uint q_d; uint k_h; uint k_s; uint k_d; uint v_h; uint v_s; uint v_d;
  uint o_h; uint o_s; uint o_d; uint m_h; uint m_q; uint m_k;
  float scale; uint flags;  // flags: 1 = mask, 2 = masked rows give zeros
} p;

// Row strides of the staged tiles (multiples of 8 halves / 4 floats: 16-byte aligned rows for the matrix loads and
// stores; the padding spreads rows over the shared-memory banks). Every subgroup has tiles of its own for its keys.
const uint kRow = MAX_HEAD + 8u;                           // Qs, Ks, Vs (halves)
const uint kP = KEYS + 8u;                                 // Ps (halves)
const uint kF = (KEYS > MAX_HEAD ? KEYS : MAX_HEAD) + 4u;  // Fs (floats): S, then P . V, then the subgroup's O
shared float16_t Qs[16u * kRow];
shared float16_t Ks[WARPS * KEYS * kRow];
shared float16_t Vs[WARPS * KEYS * kRow];
shared float Fs[WARPS * 16u * kF];
shared float16_t Ps[WARPS * 16u * kP];
shared float Ms[WARPS * 16u], Ls[WARPS * 16u];  // each subgroup's running maximum and sum per row
// 16-byte words of a KEYS-row chunk each invocation loads (of K, and of V).
const uint kWords = KEYS * MAX_HEAD / 8u / 32u;

// Lane-strided words of rows first .. first + rows (of `valid`) of an operand: word e = lane + 32 i is row
// e / words_per_row, features 8 (e % words_per_row) ..; zeros past `valid` rows and past `features`.
void LoadRows(WBuf buf, uint base, uint row_stride, uint first, uint rows, uint valid, uint words_per_row,
              uint features, uint lane, out uvec4 w[kWords]) {
  for (uint i = 0u; i < kWords; ++i) {
    uint e = lane + 32u * i;
    uint r = e / words_per_row, c = e - r * words_per_row;
    bool in_range = r < rows && first + r < valid && c * 8u < features;
    w[i] = in_range ? buf.v[(base + (first + r) * row_stride + c * 8u) / 8u] : uvec4(0u);
  }
}

// Stores LoadRows' words into the kRow-strided rows of a staged tile from element `at0`.
#define STAGE_ROWS(tile, at0, w, lane, rows, words_per_row)                \
  for (uint i = 0u; i < kWords; ++i) {                                     \
    uint e = (lane) + 32u * i;                                             \
    uint r = e / (words_per_row), c = e - r * (words_per_row);             \
    if (r < (rows)) {                                                      \
      uint at = (at0) + r * kRow + c * 8u;                                 \
      for (uint u = 0u; u < 4u; ++u) {                                     \
        f16vec2 pair = unpackFloat2x16(w[i][u]);                           \
        tile[at + 2u * u] = pair.x;                                        \
        tile[at + 2u * u + 1u] = pair.y;                                   \
      }                                                                    \
    }                                                                      \
  }

// What the mask adds to the scores of this invocation's row and columns half + 2 t of the chunk at j0 (0 without a
// mask; -inf past the keys).
void LoadMask(uint h, uint qi, uint j0, uint half_, out float add[KEYS / 2u]) {
  const float neg_inf = uintBitsToFloat(0xff800000u);
  for (uint t = 0u; t < KEYS / 2u; ++t) {
    uint j = j0 + half_ + 2u * t;
    float x = j < p.k_len ? 0.0 : neg_inf;
    if (j < p.k_len && (p.flags & 1u) != 0u && qi < p.q_len) {
      uint mi = h * p.m_h + qi * p.m_q + j * p.m_k;
#ifdef BOOL_MASK
      if (uint(p.mask.v[mi]) == 0u) x = neg_inf;
#else
      x = LOAD(p.mask, mi);
#endif
    }
    add[t] = x;
  }
}

// Orders this subgroup's accesses to its own tiles (the other subgroups never touch them).
#define SUBGROUP_SYNC()            \
  subgroupMemoryBarrierShared();   \
  subgroupBarrier()

void main() {
  const float neg_inf = uintBitsToFloat(0xff800000u);
  uint lane = gl_SubgroupInvocationID, warp = gl_SubgroupID, tid = gl_LocalInvocationID.x;
  uint q0 = gl_WorkGroupID.x * 16u, h = gl_WorkGroupID.y;
  uint hs = p.head_size, vs = p.v_head_size;
  uint hs16 = (hs + 15u) & ~15u, vs16 = (vs + 15u) & ~15u;
  uint q_words = hs16 / 8u, v_words = vs16 / 8u;
  // This invocation's row of the softmax and of the subgroup's output, and its columns there: half + 2 t.
  uint row = lane >> 1u, half_ = lane & 1u;
  uint qi = q0 + row;
  // This subgroup's tiles.
  uint kv0 = warp * KEYS * kRow, f0 = warp * 16u * kF, p0 = warp * 16u * kP;

  // Q's 16 rows, staged by the subgroups together (at most kWords words per invocation of the first subgroup's).
  uvec4 wk[kWords], wv[kWords];
  if (warp == 0u) {
    LoadRows(p.q, h * p.q_h, p.q_s, q0, 16u, p.q_len, q_words, hs, lane, wk);
    STAGE_ROWS(Qs, 0u, wk, lane, 16u, q_words);
  }
  // Subgroup w takes chunks w, w + WARPS, ... of KEYS keys each.
  uint step = WARPS * KEYS;
  float mk[KEYS / 2u];
  LoadRows(p.k, h * p.k_h, p.k_s, warp * KEYS, KEYS, p.k_len, q_words, hs, lane, wk);
  LoadRows(p.v, h * p.v_h, p.v_s, warp * KEYS, KEYS, p.k_len, v_words, vs, lane, wv);
  LoadMask(h, qi, warp * KEYS, half_, mk);
  barrier();  // Q is staged

  float m = neg_inf, l = 0.0;
  float o[MAX_HEAD / 2u];
  for (uint t = 0u; t < MAX_HEAD / 2u; ++t) o[t] = 0.0;
  for (uint j0 = warp * KEYS; j0 < p.k_len; j0 += step) {
    SUBGROUP_SYNC();  // the previous chunk's tiles have been read
    STAGE_ROWS(Ks, kv0, wk, lane, KEYS, q_words);
    STAGE_ROWS(Vs, kv0, wv, lane, KEYS, v_words);
    float add[KEYS / 2u] = mk;
    SUBGROUP_SYNC();
    if (j0 + step < p.k_len) {
      LoadRows(p.k, h * p.k_h, p.k_s, j0 + step, KEYS, p.k_len, q_words, hs, lane, wk);
      LoadRows(p.v, h * p.v_h, p.v_s, j0 + step, KEYS, p.k_len, v_words, vs, lane, wv);
      LoadMask(h, qi, j0 + step, half_, mk);
    }
    // S = Q . K^T: K's staged rows are the columns of K^T (a column-major load).
    for (uint n = 0u; n < KEYS / 16u; ++n) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      for (uint d = 0u; d < hs16; d += 16u) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;
        coopMatLoadNV(a, Qs, d, kRow, false);
        coopMatLoadNV(b, Ks, kv0 + n * 16u * kRow + d, kRow, true);
        acc = coopMatMulAddNV(a, b, acc);
      }
      coopMatStoreNV(acc, Fs, f0 + n * 16u, kF, false);
    }
    SUBGROUP_SYNC();
    // The online softmax of this chunk's scores, row by lane pairs.
    float s[KEYS / 2u];
    float chunk_max = neg_inf;
    for (uint t = 0u; t < KEYS / 2u; ++t) {
      s[t] = p.scale * Fs[f0 + row * kF + half_ + 2u * t] + add[t];
      chunk_max = max(chunk_max, s[t]);
    }
    chunk_max = max(chunk_max, subgroupShuffleXor(chunk_max, 1u));
    float m_new = max(m, chunk_max);
    float sum = 0.0;
    // exp(-inf - -inf) is NaN: while every score of the row so far is -inf, nothing is accumulated.
    for (uint t = 0u; t < KEYS / 2u; ++t) {
      float e = m_new == neg_inf ? 0.0 : exp(s[t] - m_new);
      Ps[p0 + row * kP + half_ + 2u * t] = float16_t(e);
      sum += e;
    }
    sum += subgroupShuffleXor(sum, 1u);
    float rescale = m == neg_inf ? 0.0 : exp(m - m_new);
    l = l * rescale + sum;
    m = m_new;
    SUBGROUP_SYNC();  // P is staged; the scores in Fs have been read
    for (uint n = 0u; n < vs16 / 16u; ++n) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      for (uint kk = 0u; kk < KEYS; kk += 16u) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;
        coopMatLoadNV(a, Ps, p0 + kk, kP, false);
        coopMatLoadNV(b, Vs, kv0 + kk * kRow + n * 16u, kRow, false);
        acc = coopMatMulAddNV(a, b, acc);
      }
      coopMatStoreNV(acc, Fs, f0 + n * 16u, kF, false);
    }
    SUBGROUP_SYNC();
    for (uint t = 0u; t < MAX_HEAD / 2u; ++t) {
      uint c = half_ + 2u * t;
      if (c < vs16) o[t] = o[t] * rescale + Fs[f0 + row * kF + c];
    }
  }
  // Each subgroup's (maximum, sum, O) per row to shared memory, then every invocation merges some outputs:
  // O = sum_w exp(m_w - M) O_w / sum_w exp(m_w - M) l_w with M = max_w m_w.
  SUBGROUP_SYNC();  // this subgroup's last reads of Fs are done
  if (half_ == 0u) {
    Ms[warp * 16u + row] = m;
    Ls[warp * 16u + row] = l;
  }
  for (uint t = 0u; t < MAX_HEAD / 2u; ++t) {
    uint c = half_ + 2u * t;
    if (c < vs16) Fs[f0 + row * kF + c] = o[t];
  }
  barrier();
  // Invocation tid: row tid / (2 WARPS) of the block, columns tid % (2 WARPS) + 2 WARPS u (consecutive invocations,
// consecutive columns).
  const uint kColumnStep = WARPS * 2u;
  uint r = tid / kColumnStep, c0 = tid % kColumnStep;
  uint out_row = q0 + r;
  if (out_row >= p.q_len) return;
  float big = neg_inf;
  for (uint w = 0u; w < WARPS; ++w) big = max(big, Ms[w * 16u + r]);
  float factor[WARPS];
  float total = 0.0;
  for (uint w = 0u; w < WARPS; ++w) {
    float mw = Ms[w * 16u + r];
    factor[w] = mw == neg_inf ? 0.0 : exp(mw - big);
    total += factor[w] * Ls[w * 16u + r];
  }
  bool all_masked = big == neg_inf;
  for (uint c = c0; c < vs; c += kColumnStep) {
    float acc = 0.0;
    for (uint w = 0u; w < WARPS; ++w) acc += factor[w] * Fs[w * 16u * kF + r * kF + c];
    float value = all_masked ? ((p.flags & 2u) != 0u ? 0.0 : uintBitsToFloat(0x7fc00000u)) : acc / total;
    STORE(p.out_, h * p.o_h + out_row * p.o_s + c * p.o_d, value);
  }
}
