#version 450
// GlobalAveragePool / GlobalMaxPool (NCHW): one workgroup per (image, channel) plane; its 256 invocations read the
// plane's contiguous positions in turn and reduce through shared memory (a plane of PP-OCRv4's squeeze-excitation
// blocks holds 25600 positions: one invocation per plane would read them one after another). mode 0: max, 1: average.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params { TBuf x; TBuf y; uint planes; uint spatial; uint mode; } p;
shared float partial[256];
void main() {
  uint plane = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (plane >= p.planes) return;
  uint t = gl_LocalInvocationID.x;
  uint base = plane * p.spatial;
  float acc = p.mode == 0u ? uintBitsToFloat(0xff800000u) : 0.0;
  for (uint j = t; j < p.spatial; j += 256) {
    float v = LOAD(p.x, base + j);
    acc = p.mode == 0u ? max(acc, v) : acc + v;
  }
  partial[t] = acc;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] = p.mode == 0u ? max(partial[t], partial[t + s]) : partial[t] + partial[t + s];
    barrier();
  }
  if (t == 0u) STORE(p.y, plane, p.mode == 0u ? partial[0] : partial[0] / float(p.spatial));
}
