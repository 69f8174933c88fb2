#version 450
// ai.tessera::Attention (graph/passes/attention_fusion.h) for one batch entry: out = softmax(scale * Q.K^T + mask) . V
// per head, read and written through element strides along (heads, position, feature) (the absorbed Transposes; the
// kernel adds each batch entry's offsets to the addresses). One workgroup of 64 invocations per query row (h, i):
// the row of Q goes to shared memory, then the keys are taken a chunk at a time with an online softmax -- the
// chunk's keys are staged in shared memory, invocation t scores key j0 + t, the chunk's maximum and sum are read from
// shared memory by every invocation, and invocation t accumulates output features t, t + 64, ... (head sizes up to
// 512: 8 per invocation) rescaled by the running maximum. Sums in float. A row whose scores are all -inf gives zeros with masked_rows_zero (flags bit 2), else NaN
// (as softmax of -inf everywhere). BOOL_MASK: the mask is bytes (add 0 where set, -inf where not), else of type T.
#include "common.glsl"
#ifdef BOOL_MASK
#extension GL_EXT_shader_8bit_storage : require
layout(buffer_reference, std430, buffer_reference_align = 1) buffer MBuf { uint8_t v[]; };
#else
#define MBuf TBuf
#endif
layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  TBuf q; TBuf k; TBuf v; TBuf out_; MBuf mask;
  uint heads; uint q_len; uint k_len; uint head_size; uint v_head_size;
  uint q_h; uint q_s; uint q_d; uint k_h; uint k_s; uint k_d; uint v_h; uint v_s; uint v_d;
  uint o_h; uint o_s; uint o_d; uint m_h; uint m_q; uint m_k;
  float scale; uint flags;  // flags: 1 = mask, 2 = masked rows give zeros
} p;
const uint kMaxHeadSize = 512u;
// Keys are taken `chunk` at a time (64, or fewer for large heads: chunk * (head_size + 1) <= kStagedKeys floats): each
// chunk of K is staged in shared memory with coalesced loads (one key row per padded row: the scores' reads of
// different keys fall in different banks), then invocation t < chunk scores key j0 + t.
const uint kStagedKeys = 2112u;
shared float qs[kMaxHeadSize];
shared float ks[kStagedKeys];
shared float ps[64];  // the chunk's scores, then their exponentials

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.heads * p.q_len) return;
  uint h = row / p.q_len, i = row % p.q_len, t = gl_LocalInvocationID.x;
  uint hs = p.head_size, stride = hs + 1u;
  uint chunk = min(64u, kStagedKeys / stride);
  for (uint d = t; d < hs; d += 64u) qs[d] = LOAD(p.q, h * p.q_h + i * p.q_s + d * p.q_d);
  const float neg_inf = uintBitsToFloat(0xff800000u);
  float m = neg_inf, l = 0.0;
  float acc[kMaxHeadSize / 64u];
  for (uint o = 0u; o < kMaxHeadSize / 64u; ++o) acc[o] = 0.0;
  for (uint j0 = 0u; j0 < p.k_len; j0 += chunk) {
    uint n = min(chunk, p.k_len - j0);
    for (uint e = t; e < n * hs; e += 64u) {
      uint c = e / hs, d = e - c * hs;
      ks[c * stride + d] = LOAD(p.k, h * p.k_h + (j0 + c) * p.k_s + d * p.k_d);
    }
    barrier();  // the chunk of K (and, at the first, the row of Q) is staged
    float s = neg_inf;
    if (t < n) {
      uint j = j0 + t;
      vec4 dot4 = vec4(0.0);
      uint d = 0u;
      for (; d + 4u <= hs; d += 4u)
        dot4 += vec4(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]) *
                vec4(ks[t * stride + d], ks[t * stride + d + 1u], ks[t * stride + d + 2u], ks[t * stride + d + 3u]);
      float dot = (dot4.x + dot4.y) + (dot4.z + dot4.w);
      for (; d < hs; ++d) dot += qs[d] * ks[t * stride + d];
      s = p.scale * dot;
      if ((p.flags & 1u) != 0u) {
        uint mi = h * p.m_h + i * p.m_q + j * p.m_k;
#ifdef BOOL_MASK
        if (uint(p.mask.v[mi]) == 0u) s = neg_inf;
#else
        s += LOAD(p.mask, mi);
#endif
      }
    }
    ps[t] = s;
    barrier();
    // Four independent partial maxima and sums: shorter dependency chains through shared memory.
    vec4 max4 = vec4(neg_inf);
    uint c4 = 0u;
    for (; c4 + 4u <= n; c4 += 4u) max4 = max(max4, vec4(ps[c4], ps[c4 + 1u], ps[c4 + 2u], ps[c4 + 3u]));
    for (; c4 < n; ++c4) max4.x = max(max4.x, ps[c4]);
    float chunk_max = max(max(max4.x, max4.y), max(max4.z, max4.w));
    float m_new = max(m, chunk_max);
    barrier();  // every invocation has read the scores
    // exp(-inf - -inf) is NaN: while every score so far is -inf, nothing is accumulated.
    ps[t] = (t < n && m_new != neg_inf) ? exp(s - m_new) : 0.0;
    barrier();
    float rescale = (m == neg_inf) ? 0.0 : exp(m - m_new);
    vec4 sum4 = vec4(0.0);
    for (c4 = 0u; c4 + 4u <= n; c4 += 4u) sum4 += vec4(ps[c4], ps[c4 + 1u], ps[c4 + 2u], ps[c4 + 3u]);
    for (; c4 < n; ++c4) sum4.x += ps[c4];
    float sum = (sum4.x + sum4.y) + (sum4.z + sum4.w);
    l = l * rescale + sum;
    // Invocation t: output features t, t + 64, ...; V's rows read along the features (coalesced), eight in flight.
    for (uint o = 0u; o < kMaxHeadSize / 64u; ++o) {
      uint f = t + 64u * o;
      if (f >= p.v_head_size) break;
      float a = acc[o] * rescale;
      uint vb = h * p.v_h + j0 * p.v_s + f * p.v_d;
      uint c = 0u;
      for (; c + 8u <= n; c += 8u) {
        float v8[8];
        for (uint u = 0u; u < 8u; ++u) v8[u] = LOAD(p.v, vb + (c + u) * p.v_s);
        for (uint u = 0u; u < 8u; ++u) a += ps[c + u] * v8[u];
      }
      for (; c < n; ++c) a += ps[c] * LOAD(p.v, vb + c * p.v_s);
      acc[o] = a;
    }
    m = m_new;
    barrier();  // every invocation is done with this chunk's K and exponentials
  }
  bool all_masked = m == neg_inf;
  for (uint o = 0u; o < kMaxHeadSize / 64u; ++o) {
    uint f = t + 64u * o;
    if (f >= p.v_head_size) break;
    float value = all_masked ? ((p.flags & 2u) != 0u ? 0.0 : uintBitsToFloat(0x7fc00000u)) : acc[o] / l;
    STORE(p.out_, h * p.o_h + i * p.o_s + f * p.o_d, value);
  }
}
