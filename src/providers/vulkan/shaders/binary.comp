#version 450
// c = a op b with numpy broadcasting over at most 5 (collapsed) dimensions; strides are in elements, 0 where an
// operand is broadcast.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  TBuf a; TBuf b; TBuf c; uint n; uint op; uint rank; uint dims[5]; uint a_strides[5]; uint b_strides[5];
} p;
void main() {
  uint i = FlatIndex();
  if (i >= p.n) return;
  uint rest = i, ai = 0, bi = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint k = rest % p.dims[d];
    rest /= p.dims[d];
    ai += k * p.a_strides[d];
    bi += k * p.b_strides[d];
  }
  float x = LOAD(p.a, ai), y = LOAD(p.b, bi), r;
  switch (p.op) {
    case 0u: r = x + y; break;
    case 1u: r = x - y; break;
    case 2u: r = x * y; break;
    case 3u: r = Div(x, y); break;
    case 4u:
      if (y == 2.0) { r = x * x; break; }
      r = pow(abs(x), y);
      if (x < 0.0) r = fract(y) != 0.0 ? uintBitsToFloat(0x7fc00000u) : (mod(abs(y), 2.0) == 1.0 ? -r : r);
      if (y == 0.0) r = 1.0;
      break;
    case 5u: r = max(x, y); break;
    case 6u: r = min(x, y); break;
    case 7u: r = x < 0.0 ? x * y : x; break;  // PRelu
    default: r = x;
  }
  STORE(p.c, i, r);
}
