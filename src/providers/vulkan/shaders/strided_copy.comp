#version 450
// out[obase + sum(i_d * ostr_d)] = in[ibase + sum(i_d * istr_d)] over an index space of at most 6 dimensions
// (strides in elements, negative for reversed slices): Transpose, Slice, Concat, Split, Expand, Tile's pieces.
// Elements are moved as raw bits: 32-bit (ELEM32), 16-bit (ELEM16) or 8-bit (ELEM8: bool, int8, uint8); 64-bit elements are pairs of 32-bit ones.
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
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  EBuf src; EBuf dst; uint n; uint rank; int ibase; int obase; uint dims[6]; int istr[6]; int ostr[6];
} p;
void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.n) return;
  uint rest = i;
  int si = p.ibase, di = p.obase;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint k = rest % p.dims[d];
    rest /= p.dims[d];
    si += int(k) * p.istr[d];
    di += int(k) * p.ostr[d];
  }
  p.dst.v[di] = p.src.v[si];
}
