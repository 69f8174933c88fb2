#version 450
// BatchNormalization (inference): y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel; x is
// [N, C, spatial...] with `spatial` elements per channel and image.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf scale; TBuf bias; TBuf mean; TBuf var; TBuf y; uint n; uint C; uint spatial; float epsilon;
} p;
void main() {
  uint i = FlatIndex();
  if (i >= p.n) return;
  uint c = (i / p.spatial) % p.C;
  float v = (LOAD(p.x, i) - LOAD(p.mean, c)) * inversesqrt(LOAD(p.var, c) + p.epsilon) * LOAD(p.scale, c) +
            LOAD(p.bias, c);
  STORE(p.y, i, v);
}
