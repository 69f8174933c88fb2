#version 450
// Softmax / LogSoftmax along an axis of D elements with stride `inner`: one workgroup per row (outer x inner rows).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params { TBuf x; TBuf y; uint rows; uint D; uint inner; uint log_softmax; } p;
shared float partial[256];
float Reduce(float v, bool is_max) {
  uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] = is_max ? max(partial[t], partial[t + s]) : partial[t] + partial[t + s];
    barrier();
  }
  float r = partial[0];
  barrier();
  return r;
}
void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;
  uint o = row / p.inner, in_ = row % p.inner;
  uint base = o * p.D * p.inner + in_;
  float m = uintBitsToFloat(0xff800000u);
  for (uint j = gl_LocalInvocationID.x; j < p.D; j += 256) m = max(m, LOAD(p.x, base + j * p.inner));
  m = Reduce(m, true);
  float s = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < p.D; j += 256) s += exp(LOAD(p.x, base + j * p.inner) - m);
  s = Reduce(s, false);
  float log_s = log(s);
  for (uint j = gl_LocalInvocationID.x; j < p.D; j += 256) {
    float v = LOAD(p.x, base + j * p.inner) - m;
    STORE(p.y, base + j * p.inner, p.log_softmax != 0u ? v - log_s : exp(v) / s);
  }
}
