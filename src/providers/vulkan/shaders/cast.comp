#version 450
// y = Cast(x): the source type by SRC_F32, SRC_F16, SRC_I32, SRC_I64 (the low word, exact for |v| < 2^31: attention
// masks and indices) or SRC_B8 (bool), the destination by DST_F32, DST_F16 or DST_B8 (bool: nonzero -> 1; NaN is
// nonzero). To float16 the value is rounded from float32. With IS_NAN (a float source, DST_B8): y = isnan(x).
#extension GL_EXT_buffer_reference : require
#if defined(SRC_F16) || defined(DST_F16)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#endif
#if defined(SRC_B8) || defined(DST_B8)
#extension GL_EXT_shader_8bit_storage : require
#endif
#if defined(SRC_F32)
layout(buffer_reference, std430, buffer_reference_align = 4) buffer XBuf { float v[]; };
#elif defined(SRC_F16)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer XBuf { float16_t v[]; };
#elif defined(SRC_B8)
layout(buffer_reference, std430, buffer_reference_align = 1) buffer XBuf { uint8_t v[]; };
#else
layout(buffer_reference, std430, buffer_reference_align = 4) buffer XBuf { int v[]; };
#endif
#if defined(DST_F16)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer YBuf { float16_t v[]; };
#elif defined(DST_B8)
layout(buffer_reference, std430, buffer_reference_align = 1) buffer YBuf { uint8_t v[]; };
#else
layout(buffer_reference, std430, buffer_reference_align = 4) buffer YBuf { float v[]; };
#endif
layout(local_size_x = 256) in;
layout(push_constant) uniform Params { XBuf x; YBuf y; uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.n) return;
#if defined(SRC_I64)
  int source = p.x.v[2 * i];
  bool nonzero = source != 0 || p.x.v[2 * i + 1] != 0;
  float value = float(source);
#elif defined(SRC_I32)
  bool nonzero = p.x.v[i] != 0;
  float value = float(p.x.v[i]);
#elif defined(SRC_B8)
  bool nonzero = uint(p.x.v[i]) != 0u;
  float value = nonzero ? 1.0 : 0.0;
#else
  float value = float(p.x.v[i]);
  bool nonzero = value != 0.0;  // NaN too
#endif
#if defined(IS_NAN)
  p.y.v[i] = uint8_t(isnan(value) ? 1u : 0u);
#elif defined(DST_B8)
  p.y.v[i] = uint8_t(nonzero ? 1u : 0u);
#elif defined(DST_F16)
  p.y.v[i] = float16_t(value);
#else
  p.y.v[i] = value;
#endif
}
