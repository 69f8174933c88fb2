#version 450
// 2-D transposed convolution (NCHW), one invocation per output element, gathering the inputs that reach it:
// y[n, k, oh, ow] = bias[k] + sum over c of group, kh, kw with oh = ih * SH - PH + kh * DH (and the same for w) of
// x[n, c, ih, iw] * w[c, k % Kg, kh, kw]. W is [C, K / groups, KH, KW].
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf w; TBuf bias; TBuf y;
  uint N; uint C; uint H; uint W; uint K; uint OH; uint OW;
  uint KH; uint KW; uint SH; uint SW; int PH; int PW; uint DH; uint DW;
  uint groups; uint flags;
} p;
void main() {
  uint i = FlatIndex();
  if (i >= p.N * p.K * p.OH * p.OW) return;
  uint ow = i % p.OW, t = i / p.OW;
  uint oh = t % p.OH; t /= p.OH;
  uint k = t % p.K, n = t / p.K;
  uint Kg = p.K / p.groups, Cg = p.C / p.groups;
  uint g = k / Kg, kk = k % Kg;
  float acc = (p.flags & 1u) != 0u ? LOAD(p.bias, k) : 0.0;
  for (uint kh = 0; kh < p.KH; ++kh) {
    int hnum = int(oh) + p.PH - int(kh * p.DH);
    if (hnum < 0 || hnum % int(p.SH) != 0) continue;
    uint ih = uint(hnum) / p.SH;
    if (ih >= p.H) continue;
    for (uint kw = 0; kw < p.KW; ++kw) {
      int wnum = int(ow) + p.PW - int(kw * p.DW);
      if (wnum < 0 || wnum % int(p.SW) != 0) continue;
      uint iw = uint(wnum) / p.SW;
      if (iw >= p.W) continue;
      for (uint c = 0; c < Cg; ++c) {
        uint ci = g * Cg + c;
        acc += LOAD(p.x, ((n * p.C + ci) * p.H + ih) * p.W + iw) * LOAD(p.w, ((ci * Kg + kk) * p.KH + kh) * p.KW + kw);
      }
    }
  }
  STORE(p.y, i, acc);
}
