#version 450
// Gather along an axis: out[o, j, i] = data[o, idx[j], i] with data [outer, axis, inner] and idx [count]; indices
// are int32 or int64 (the low word; negative ones count from the end). Raw 32-bit elements (ELEM32), 16-bit (ELEM16) or 8-bit (ELEM8: bool, int8, uint8).
#extension GL_EXT_buffer_reference : require
#if defined(ELEM16)
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_16bit_storage : require
layout(buffer_reference, std430, buffer_reference_align = 2) buffer EBuf { uint16_t v[]; };
#elif defined(ELEM8)
#extension GL_EXT_shader_8bit_storage : require
layout(buffer_reference, std430, buffer_reference_align = 1) buffer EBuf { uint8_t v[]; };
#else
layout(buffer_reference, std430, buffer_reference_align = 4) buffer EBuf { uint v[]; };
#endif
layout(buffer_reference, std430, buffer_reference_align = 4) buffer IBuf { int v[]; };
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  EBuf data; IBuf indices; EBuf out_; uint n; uint axis; uint inner; uint count; uint index64;
} p;
void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.n) return;
  uint in_ = i % p.inner, t = i / p.inner;
  uint j = t % p.count, o = t / p.count;
  int k = p.index64 != 0u ? p.indices.v[2 * j] : p.indices.v[j];
  if (k < 0) k += int(p.axis);
  k = clamp(k, 0, int(p.axis) - 1);  // out-of-range indices are rejected on the host when they are known there
  p.out_.v[i] = p.data.v[(o * p.axis + uint(k)) * p.inner + in_];
}
