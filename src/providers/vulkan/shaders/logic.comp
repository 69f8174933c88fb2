#version 450
// Logic on bool tensors (one byte per element, 0 or 1): c = a op b with numpy broadcasting over at most 5 (collapsed)
// dimensions, op 0 And, 1 Or, 2 Xor; op 3 Not (c = !a, b unused). The push constants are binary.comp's: strides in
// elements, 0 where an operand is broadcast.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_8bit_storage : require
layout(buffer_reference, std430, buffer_reference_align = 1) buffer BBuf { uint8_t v[]; };
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  BBuf a; BBuf b; BBuf c; uint n; uint op; uint rank; uint dims[5]; uint a_strides[5]; uint b_strides[5];
} p;
void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.n) return;
  uint rest = i, ai = 0, bi = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint k = rest % p.dims[d];
    rest /= p.dims[d];
    ai += k * p.a_strides[d];
    bi += k * p.b_strides[d];
  }
  bool x = uint(p.a.v[ai]) != 0u, r;
  if (p.op == 3u) {
    r = !x;
  } else {
    bool y = uint(p.b.v[bi]) != 0u;
    r = p.op == 0u ? (x && y) : p.op == 1u ? (x || y) : (x != y);
  }
  p.c.v[i] = uint8_t(r ? 1u : 0u);
}
