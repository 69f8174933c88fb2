#version 450
// 2-D convolution (NCHW) as an implicit matrix product per group: rows are the group's output channels, columns the
// output pixels of every image (n, oh, ow), depth the group's input channels times the window. 64 x 64 tiles, 16
// deep (coop_tile.glsl), each of the 256 invocations computing 4 x 4 outputs; bias and activation in the
// epilogue; an optional residual (same shape as Y) is added before the activation. With splits > 1 (split-K, for
// grids too small to fill the GPU), workgroup z = group * splits + s covers depth chunk s and writes raw float sums to
// `partial` ([splits][K][N * OH * OW]); conv_reduce.comp adds them up and applies the epilogue.
#include "common.glsl"
layout(local_size_x = 16, local_size_y = 16) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf w; TBuf bias; TBuf y; TBuf residual;
  uint N; uint C; uint H; uint W; uint K; uint OH; uint OW;
  uint KH; uint KW; uint SH; uint SW; int PH; int PW; uint DH; uint DW;
  uint groups; uint act; float act_a; float act_b; uint flags;  // flags: 1 = bias, 2 = residual
  uint splits;  // > 1: write raw sums of depth chunk z % splits to `y` as floats (partials)
} p;
// flags bit 4: a pointwise convolution (1 x 1 window, stride 1, no padding): depth index = input channel.
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Partials { float v[]; };

#include "coop_tile.glsl"

// What an invocation's B column (one output pixel of one image) reads: its image's input planes and window origin.
struct Column {
  bool ok;
  uint x_base, pix;
  int ih0, iw0;
  uint window, plane;
};

// Where the invocation's kPerInvocation B elements of a slice sit in the window: depth e / 64 of the slice is input
// channel c, window row kh, column kw. Kept from slice to slice by adding the 16 of a slice with carries (the step
// split the same way once) instead of two integer divisions per element and slice -- most of a 3 x 3 convolution's
// instructions on an H200 before.
struct WindowPos {
  uint c[kPerInvocation], kh[kPerInvocation], kw[kPerInvocation];
};
void Place(uint depth_index, out uint c, out uint kh, out uint kw) {
  uint window = p.KH * p.KW;
  c = depth_index / window;
  uint rs = depth_index - c * window;
  kh = rs / p.KW;
  kw = rs - kh * p.KW;
}
void Advance(inout WindowPos at, uint step_c, uint step_kh, uint step_kw) {
  for (uint i = 0u; i < kPerInvocation; ++i) {
    uint kw = at.kw[i] + step_kw, kh = at.kh[i] + step_kh, c = at.c[i] + step_c;
    if (kw >= p.KW) { kw -= p.KW; ++kh; }
    if (kh >= p.KH) { kh -= p.KH; ++c; }
    at.c[i] = c; at.kh[i] = kh; at.kw[i] = kw;
  }
}

// Element e = tid + 256 i of the slice at depth k0: the weight of output channel row0 + e / TILE_K (of the group's
// Kg, first_k the group's first) at depth e % TILE_K; the input value at depth e / 64 of this invocation's column
// (window element and channel, or the channel of a pointwise convolution). Zeros outside and past k_end.
// `at`: where this slice's B elements sit in the window (not read for pointwise convolutions).
void LoadSlice(uint k0, uint k_end, uint row0, uint first_k, uint Kg, uint depth, uint tid, Column col,
               WindowPos at, out float ra[kPerInvocation], out float rb[kPerInvocation]) {
  for (uint i = 0u; i < kPerInvocation; ++i) {
    uint e = tid + 256u * i;
    uint gr = row0 + e / TILE_K, gk = k0 + e % TILE_K;
    ra[i] = (gr < Kg && gk < k_end) ? LOAD(p.w, (first_k + gr) * depth + gk) : 0.0;
    uint gkb = k0 + e / 64u;
    float v = 0.0;
    if (gkb < k_end && col.ok && (p.flags & 4u) != 0u) {
      v = LOAD(p.x, col.x_base + gkb * col.plane + col.pix);
    } else if (gkb < k_end && col.ok) {
      int ih = col.ih0 + int(at.kh[i] * p.DH), iw = col.iw0 + int(at.kw[i] * p.DW);
      if (ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W))
        v = LOAD(p.x, col.x_base + at.c[i] * col.plane + uint(ih) * p.W + uint(iw));
    }
    rb[i] = v;
  }
}

void main() {
  uint g = gl_WorkGroupID.z / p.splits, split = gl_WorkGroupID.z % p.splits;
  uint Kg = p.K / p.groups, Cg = p.C / p.groups;
  uint window = p.KH * p.KW;
  uint depth = Cg * window;
  uint pixels = p.OH * p.OW;
  uint cols = p.N * pixels;
  uint row0 = gl_WorkGroupID.y * 64, col0 = gl_WorkGroupID.x * 64;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * 16 + tx;
  float acc[4][4];
  for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  // This invocation's B column is the same in every tile: its image and window origin, computed once.
  uint my_col = col0 + tid % 64;
  bool col_ok = my_col < cols;
  uint n = col_ok ? my_col / pixels : 0u, pix = col_ok ? my_col % pixels : 0u;
  uint oh = pix / p.OW, ow = pix % p.OW;
  int ih0 = int(oh * p.SH) - p.PH, iw0 = int(ow * p.SW) - p.PW;
  uint x_base = (n * p.C + g * Cg) * p.H * p.W;
  uint plane = p.H * p.W;
  // Depth chunk of this split (whole slices).
  uint chunk = ((depth + p.splits * TILE_K - 1u) / (p.splits * TILE_K)) * TILE_K;
  uint k_begin = split * chunk, k_end = min(depth, k_begin + chunk);
  TILE_BEGIN();
  // Each invocation stages kPerInvocation weights and input values per slice, loaded into registers one slice
  // ahead: the next slice's loads are in flight while this one is multiplied.
  Column column = Column(col_ok, x_base, pix, ih0, iw0, window, plane);
  float ra[kPerInvocation], rb[kPerInvocation];
  // The window positions of this invocation's first slice, and a slice's step split the same way.
  WindowPos at;
  for (uint i = 0u; i < kPerInvocation; ++i) Place(k_begin + (tid + 256u * i) / 64u, at.c[i], at.kh[i], at.kw[i]);
  uint step_c, step_kh, step_kw;
  Place(TILE_K, step_c, step_kh, step_kw);
  uint k0 = k_begin;
  if (k0 < k_end) LoadSlice(k0, k_end, row0, g * Kg, Kg, depth, tid, column, at, ra, rb);
  for (; k0 < k_end; k0 += TILE_K) {
    for (uint i = 0u; i < kPerInvocation; ++i) {
      uint e = tid + 256u * i;
      PUT_A(e % TILE_K, e / TILE_K, ra[i]);
      PUT_B(e / 64u, tid % 64u, rb[i]);
    }
    barrier();
    if (k0 + TILE_K < k_end) {
      Advance(at, step_c, step_kh, step_kw);
      LoadSlice(k0 + TILE_K, k_end, row0, g * Kg, Kg, depth, tid, column, at, ra, rb);
    }
    TILE_PRODUCT(acc, tx, ty);
    barrier();
  }
  TILE_END(acc, tx, ty);
  if (p.splits > 1u) {  // raw sums of this depth chunk
    Partials partial = Partials(p.y);
    for (int i = 0; i < 4; ++i) {
      uint r = row0 + ty + 16 * i;
      if (r >= Kg) continue;
      for (int j = 0; j < 4; ++j) {
        uint col = col0 + tx + 16 * j;
        if (col < cols) partial.v[(split * p.K + g * Kg + r) * cols + col] = acc[i][j];
      }
    }
    return;
  }
  // Each of the invocation's four columns: its image and pixel, found once (not once per output row).
  uint col_base[4];
  for (int j = 0; j < 4; ++j) {
    uint col = col0 + tx + 16 * j;
    uint n = col / pixels;
    col_base[j] = n * p.K * pixels + (col - n * pixels);
  }
  for (int i = 0; i < 4; ++i) {
    uint r = row0 + ty + 16 * i;
    if (r >= Kg) continue;
    uint k = g * Kg + r;
    float b = (p.flags & 1u) != 0u ? LOAD(p.bias, k) : 0.0;
    for (int j = 0; j < 4; ++j) {
      uint col = col0 + tx + 16 * j;
      if (col >= cols) continue;
      uint out_index = col_base[j] + k * pixels;
      float v = acc[i][j] + b;
      if ((p.flags & 2u) != 0u) v += LOAD(p.residual, out_index);
      STORE(p.y, out_index, Activate(v, p.act, p.act_a, p.act_b));
    }
  }
}
