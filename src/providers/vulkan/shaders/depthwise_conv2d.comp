#version 450
// Grouped 2-D convolution with one input channel per group (depthwise; output channel k reads input channel
// k / multiplier): one invocation per output element.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf w; TBuf bias; TBuf y; TBuf residual;
  uint N; uint C; uint H; uint W; uint K; uint OH; uint OW;
  uint KH; uint KW; uint SH; uint SW; int PH; int PW; uint DH; uint DW;
  uint groups; uint act; float act_a; float act_b; uint flags;
} p;
void main() {
  uint i = FlatIndex();
  uint total = p.N * p.K * p.OH * p.OW;
  if (i >= total) return;
  uint ow = i % p.OW, t = i / p.OW;
  uint oh = t % p.OH; t /= p.OH;
  uint k = t % p.K, n = t / p.K;
  uint c = k / (p.K / p.C);
  float acc = (p.flags & 1u) != 0u ? LOAD(p.bias, k) : 0.0;
  uint x_base = (n * p.C + c) * p.H * p.W;
  uint w_base = k * p.KH * p.KW;
  for (uint kh = 0; kh < p.KH; ++kh) {
    int ih = int(oh * p.SH + kh * p.DH) - p.PH;
    if (ih < 0 || ih >= int(p.H)) continue;
    for (uint kw = 0; kw < p.KW; ++kw) {
      int iw = int(ow * p.SW + kw * p.DW) - p.PW;
      if (iw < 0 || iw >= int(p.W)) continue;
      acc += LOAD(p.x, x_base + uint(ih) * p.W + uint(iw)) * LOAD(p.w, w_base + kh * p.KW + kw);
    }
  }
  if ((p.flags & 2u) != 0u) acc += LOAD(p.residual, i);
  STORE(p.y, i, Activate(acc, p.act, p.act_a, p.act_b));
}
