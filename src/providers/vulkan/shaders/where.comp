#version 450
// out = condition ? x : y with numpy broadcasting of the three over at most 5 (collapsed) dimensions; the condition is
// bool (one byte per element), x, y and out of the variant's type T. Strides in elements, 0 where broadcast.
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : require
layout(buffer_reference, std430, buffer_reference_align = 1) buffer BBuf { uint8_t v[]; };
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  BBuf c; TBuf x; TBuf y; TBuf out_; uint n; uint rank; uint dims[5]; uint c_strides[5]; uint x_strides[5];
  uint y_strides[5];
} p;
void main() {
  uint i = FlatIndex();
  if (i >= p.n) return;
  uint rest = i, ci = 0, xi = 0, yi = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint k = rest % p.dims[d];
    rest /= p.dims[d];
    ci += k * p.c_strides[d];
    xi += k * p.x_strides[d];
    yi += k * p.y_strides[d];
  }
  p.out_.v[i] = uint(p.c.v[ci]) != 0u ? p.x.v[xi] : p.y.v[yi];
}
