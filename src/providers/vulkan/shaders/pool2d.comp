#version 450
// MaxPool / AveragePool over 2-D windows (NCHW), one invocation per output element. mode 0: max, 1: average
// (count_include_pad: divide by the full window, else by the elements inside the input).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf y;
  uint NC; uint H; uint W; uint OH; uint OW;
  uint KH; uint KW; uint SH; uint SW; int PH; int PW; uint DH; uint DW;
  uint mode; uint count_include_pad;
} p;
void main() {
  uint i = FlatIndex();
  if (i >= p.NC * p.OH * p.OW) return;
  uint ow = i % p.OW, t = i / p.OW;
  uint oh = t % p.OH, nc = t / p.OH;
  uint base = nc * p.H * p.W;
  float acc = p.mode == 0u ? uintBitsToFloat(0xff800000u) : 0.0;
  uint count = 0;
  for (uint kh = 0; kh < p.KH; ++kh) {
    int ih = int(oh * p.SH + kh * p.DH) - p.PH;
    if (ih < 0 || ih >= int(p.H)) continue;
    for (uint kw = 0; kw < p.KW; ++kw) {
      int iw = int(ow * p.SW + kw * p.DW) - p.PW;
      if (iw < 0 || iw >= int(p.W)) continue;
      float v = LOAD(p.x, base + uint(ih) * p.W + uint(iw));
      acc = p.mode == 0u ? max(acc, v) : acc + v;
      ++count;
    }
  }
  if (p.mode == 1u) {
    float divisor;
    if (p.count_include_pad != 0u) {
      // The window clipped to the padded input (windows past the padding, from ceil_mode, count only up to it).
      int h0 = int(oh * p.SH) - p.PH, w0 = int(ow * p.SW) - p.PW;
      int h1 = min(h0 + int(p.KH), int(p.H) + p.PH), w1 = min(w0 + int(p.KW), int(p.W) + p.PW);
      divisor = float((h1 - h0) * (w1 - w0));
    } else {
      divisor = float(count);
    }
    acc = count == 0u ? 0.0 : acc / divisor;
  }
  STORE(p.y, i, acc);
}
