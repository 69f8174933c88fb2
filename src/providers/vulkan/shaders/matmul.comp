#version 450
// C[batch] = act(alpha * A[batch] x B[batch] + beta * bias) (+ addend, of C's shape), A: M x K, B: K x N, C: M x N
// (rows contiguous).
// Element (i, k) of A is at a_batch_stride * batch + i * a_row + k * a_col (strides in elements: transposes are
// strides); bias element (i, j) at i * bias_row + j * bias_col (0 strides broadcast). 64 x 64 tiles, 16 deep; each
// of the 256 invocations computes a 4 x 4 block (with COOP, the tile's products run on cooperative matrices:
// coop_tile.glsl). With splits > 1 (split-K, for grids too small to fill the GPU),
// workgroup z = batch * splits + s sums depth chunk s and writes raw float sums to `c` as [splits][batches][M][N];
// matmul_reduce.comp adds them up and applies alpha, beta * bias and the activation.
#include "common.glsl"
layout(local_size_x = 16, local_size_y = 16) in;
layout(push_constant) uniform Params {
  TBuf a; TBuf b; TBuf c; TBuf bias;
  uint M; uint N; uint K;
  uint a_row; uint a_col; uint b_row; uint b_col;
  uint a_batch; uint b_batch; uint c_batch;
  float alpha; float beta; uint bias_row; uint bias_col; uint has_bias;
  uint act; float act_a; float act_b;
  uint splits;
  uint has_addend; TBuf addend;  // FusedMatMul's addend of C's shape, added after the activation
} p;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Partials { float v[]; };

#include "coop_tile.glsl"

// Element e = tid + 256 i of the slice at depth k0: A's row e / TILE_K, depth e % TILE_K (consecutive invocations
// read consecutive depths: coalesced for row-major A); B's depth e / 64, column e % 64 (coalesced for row-major B).
// Zeros outside the matrices and past k_end.
void LoadSlice(uint k0, uint k_end, uint row0, uint col0, uint tid, uint a_base, uint b_base,
               out float ra[kPerInvocation], out float rb[kPerInvocation]) {
  for (uint i = 0u; i < kPerInvocation; ++i) {
    uint e = tid + 256u * i;
    uint gr = row0 + e / TILE_K, gk = k0 + e % TILE_K;
    ra[i] = (gr < p.M && gk < k_end) ? LOAD(p.a, a_base + gr * p.a_row + gk * p.a_col) : 0.0;
    uint gkb = k0 + e / 64u, gc = col0 + e % 64u;
    rb[i] = (gkb < k_end && gc < p.N) ? LOAD(p.b, b_base + gkb * p.b_row + gc * p.b_col) : 0.0;
  }
}

void main() {
  uint batch = gl_WorkGroupID.z / p.splits, split = gl_WorkGroupID.z % p.splits;
  uint batches = gl_NumWorkGroups.z / p.splits;
  uint chunk = ((p.K + p.splits * TILE_K - 1u) / (p.splits * TILE_K)) * TILE_K;
  uint k_begin = split * chunk, k_end = min(p.K, k_begin + chunk);
  uint row0 = gl_WorkGroupID.y * 64, col0 = gl_WorkGroupID.x * 64;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * 16 + tx;
  uint a_base = batch * p.a_batch, b_base = batch * p.b_batch;
  float acc[4][4];
  for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  TILE_BEGIN();
  // Each invocation stages kPerInvocation elements of A and of B per slice, loaded into registers one slice ahead:
  // the next slice's loads are in flight while this one is multiplied.
  float ra[kPerInvocation], rb[kPerInvocation];
  uint k0 = k_begin;
  if (k0 < k_end) LoadSlice(k0, k_end, row0, col0, tid, a_base, b_base, ra, rb);
  for (; k0 < k_end; k0 += TILE_K) {
    for (uint i = 0u; i < kPerInvocation; ++i) {
      uint e = tid + 256u * i;
      PUT_A(e % TILE_K, e / TILE_K, ra[i]);
      PUT_B(e / 64u, e % 64u, rb[i]);
    }
    barrier();
    if (k0 + TILE_K < k_end) LoadSlice(k0 + TILE_K, k_end, row0, col0, tid, a_base, b_base, ra, rb);
    TILE_PRODUCT(acc, tx, ty);
    barrier();
  }
  TILE_END(acc, tx, ty);
  if (p.splits > 1u) {
    Partials partial = Partials(p.c);
    for (int i = 0; i < 4; ++i) {
      uint r = row0 + ty + 16 * i;
      if (r >= p.M) continue;
      for (int j = 0; j < 4; ++j) {
        uint c = col0 + tx + 16 * j;
        if (c < p.N) partial.v[((split * batches + batch) * p.M + r) * p.N + c] = acc[i][j];
      }
    }
    return;
  }
  for (int i = 0; i < 4; ++i) {
    uint r = row0 + ty + 16 * i;
    if (r >= p.M) continue;
    for (int j = 0; j < 4; ++j) {
      uint c = col0 + tx + 16 * j;
      if (c >= p.N) continue;
      float v = p.alpha * acc[i][j];
      if (p.has_bias != 0u) v += p.beta * LOAD(p.bias, r * p.bias_row + c * p.bias_col);
      uint at = batch * p.c_batch + r * p.N + c;
      v = Activate(v, p.act, p.act_a, p.act_b);
      if (p.has_addend != 0u) v += LOAD(p.addend, at);
      STORE(p.c, at, v);
    }
  }
}
