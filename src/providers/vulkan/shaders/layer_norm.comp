#version 450
// LayerNormalization over rows of D contiguous elements: one workgroup per row; scale and bias have D elements.
// Optional outputs mean and inverse standard deviation (float) per row. flags: 1 = bias, 2 = statistics.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  TBuf x; TBuf scale; TBuf bias; TBuf y; FBuf mean; FBuf inv_std; uint rows; uint D; float epsilon; uint flags;
} p;
shared float partial[256];
float Sum(float v) {
  uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  float r = partial[0];
  barrier();
  return r;
}
void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;
  uint base = row * p.D;
  float s = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < p.D; j += 256) s += LOAD(p.x, base + j);
  float mu = Sum(s) / float(p.D);
  float q = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < p.D; j += 256) {
    float d = LOAD(p.x, base + j) - mu;
    q += d * d;
  }
  float rstd = inversesqrt(Sum(q) / float(p.D) + p.epsilon);
  for (uint j = gl_LocalInvocationID.x; j < p.D; j += 256) {
    float v = (LOAD(p.x, base + j) - mu) * rstd * LOAD(p.scale, j);
    if ((p.flags & 1u) != 0u) v += LOAD(p.bias, j);
    STORE(p.y, base + j, v);
  }
  if ((p.flags & 2u) != 0u && gl_LocalInvocationID.x == 0u) {
    p.mean.v[row] = mu;
    p.inv_std.v[row] = rstd;
  }
}
