#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Params { TBuf x; TBuf y; uint n; uint op; float a; float b; } p;
void main() {
  uint i = FlatIndex();
  if (i >= p.n) return;
  STORE(p.y, i, Activate(LOAD(p.x, i), p.op, p.a, p.b));
}
