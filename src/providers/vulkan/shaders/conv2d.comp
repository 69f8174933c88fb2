#version 450
// 2-D convolution (NCHW) as an implicit matrix product per group: rows are the group's output channels, columns the
// output pixels of every image (n, oh, ow), depth the group's input channels times the window. 64 x 64 tiles, 16
// deep, each of the 256 invocations computing 4 x 4 outputs; bias and activation in the epilogue; an optional
// residual (same shape as Y) is added before the activation.
#include "common.glsl"
layout(local_size_x = 16, local_size_y = 16) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf w; TBuf bias; TBuf y; TBuf residual;
  uint N; uint C; uint H; uint W; uint K; uint OH; uint OW;
  uint KH; uint KW; uint SH; uint SW; int PH; int PW; uint DH; uint DW;
  uint groups; uint act; float act_a; float act_b; uint flags;  // flags: 1 = bias, 2 = residual
} p;

shared float As[16][64];
shared float Bs[16][64];

void main() {
  uint g = gl_WorkGroupID.z;
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
  for (uint k0 = 0; k0 < depth; k0 += 16) {
    for (uint e = tid; e < 1024; e += 256) {
      uint r = e / 16, kk = e % 16;
      uint gr = row0 + r, gk = k0 + kk;
      As[kk][r] = (gr < Kg && gk < depth) ? LOAD(p.w, (g * Kg + gr) * depth + gk) : 0.0;
      uint kb = e / 64, cc = e % 64;
      uint gkb = k0 + kb, gc = col0 + cc;
      float v = 0.0;
      if (gkb < depth && gc < cols) {
        uint c = gkb / window, rs = gkb % window;
        uint kh = rs / p.KW, kw = rs % p.KW;
        uint n = gc / pixels, pix = gc % pixels;
        uint oh = pix / p.OW, ow = pix % p.OW;
        int ih = int(oh * p.SH + kh * p.DH) - p.PH;
        int iw = int(ow * p.SW + kw * p.DW) - p.PW;
        if (ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W))
          v = LOAD(p.x, ((n * p.C + g * Cg + c) * p.H + uint(ih)) * p.W + uint(iw));
      }
      Bs[kb][cc] = v;
    }
    barrier();
    for (uint kk = 0; kk < 16; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    uint r = row0 + ty + 16 * i;
    if (r >= Kg) continue;
    uint k = g * Kg + r;
    float b = (p.flags & 1u) != 0u ? LOAD(p.bias, k) : 0.0;
    for (int j = 0; j < 4; ++j) {
      uint col = col0 + tx + 16 * j;
      if (col >= cols) continue;
      uint n = col / pixels, pix = col % pixels;
      uint out_index = (n * p.K + k) * pixels + pix;
      float v = acc[i][j] + b;
      if ((p.flags & 2u) != 0u) v += LOAD(p.residual, out_index);
      STORE(p.y, out_index, Activate(v, p.act, p.act_a, p.act_b));
    }
  }
}
