#version 450
// Resize of the last two axes (N, C kept): nearest or (bi)linear, with the coordinate transformation and nearest
// rounding modes of ONNX Resize. mode 0: nearest, 1: linear. coord: 0 half_pixel, 1 asymmetric, 2 align_corners,
// 3 pytorch_half_pixel, 4 tf_half_pixel_for_nearest. nearest: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor,
// 3 ceil.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf y; uint NC; uint H; uint W; uint OH; uint OW; float scale_h; float scale_w;
  uint mode; uint coord; uint nearest; float length_h; float length_w;
} p;
// `length` is the resized length the spec's formulas use: the output size when sizes were given, else input * scale
// (not rounded).
float Source(uint o, float scale, uint in_size, float length) {
  float fo = float(o);
  switch (p.coord) {
    case 0u: return Div(fo + 0.5, scale) - 0.5;
    case 1u: return Div(fo, scale);
    case 2u: {
      if (length <= 1.0) return 0.0;
      // o * (in - 1) / (length - 1): when the quotient is a whole number, that number exactly (the products of these
      // small integers are exact in float, so the check is exact). A division that lands one ulp below it (NVIDIA's)
      // would otherwise floor to the pixel before.
      float num = fo * float(in_size - 1u), den = length - 1.0;
      float q = Div(num, den), whole = round(q);
      return whole * den == num ? whole : q;
    }
    case 3u: return length > 1.0 ? Div(fo + 0.5, scale) - 0.5 : 0.0;
    case 4u: return Div(fo + 0.5, scale);
    default: return Div(fo, scale);
  }
}
int Nearest(float s, uint size) {
  float r;
  switch (p.nearest) {
    case 0u: r = (fract(s) == 0.5) ? floor(s) : round(s); break;
    case 1u: r = (fract(s) == 0.5) ? ceil(s) : round(s); break;
    case 2u: r = floor(s); break;
    default: r = ceil(s); break;
  }
  return clamp(int(r), 0, int(size) - 1);
}
void main() {
  uint i = FlatIndex();
  if (i >= p.NC * p.OH * p.OW) return;
  uint ow = i % p.OW, t = i / p.OW;
  uint oh = t % p.OH, nc = t / p.OH;
  uint base = nc * p.H * p.W;
  float sh = Source(oh, p.scale_h, p.H, p.length_h), sw = Source(ow, p.scale_w, p.W, p.length_w);
  float v;
  if (p.mode == 0u) {
    v = LOAD(p.x, base + uint(Nearest(sh, p.H)) * p.W + uint(Nearest(sw, p.W)));
  } else {
    sh = clamp(sh, 0.0, float(p.H - 1u));
    sw = clamp(sw, 0.0, float(p.W - 1u));
    uint h0 = uint(floor(sh)), w0 = uint(floor(sw));
    uint h1 = min(h0 + 1u, p.H - 1u), w1 = min(w0 + 1u, p.W - 1u);
    float dh = sh - float(h0), dw = sw - float(w0);
    float a = LOAD(p.x, base + h0 * p.W + w0), b = LOAD(p.x, base + h0 * p.W + w1);
    float c = LOAD(p.x, base + h1 * p.W + w0), d = LOAD(p.x, base + h1 * p.W + w1);
    v = (a * (1.0 - dw) + b * dw) * (1.0 - dh) + (c * (1.0 - dw) + d * dw) * dh;
  }
  STORE(p.y, i, v);
}
