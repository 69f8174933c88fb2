#version 450
// Cast between float32 and float16 (F32_TO_F16, F16_TO_F32), and from int32 / int64 to float32 or float16
// (I32_TO_F32, I64_TO_F32, I32_TO_F16, I64_TO_F16: an int64's low word, exact for |v| < 2^31; attention masks and
// indices). To float16 the value is rounded from float32.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
layout(buffer_reference, std430, buffer_reference_align = 4) buffer FBuf { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer HBuf { float16_t v[]; };
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer IBuf { int v[]; };
#if defined(F32_TO_F16)
layout(push_constant) uniform Params { FBuf x; HBuf y; uint n; } p;
#elif defined(F16_TO_F32)
layout(push_constant) uniform Params { HBuf x; FBuf y; uint n; } p;
#elif defined(I32_TO_F16) || defined(I64_TO_F16)
layout(push_constant) uniform Params { IBuf x; HBuf y; uint n; } p;
#else
layout(push_constant) uniform Params { IBuf x; FBuf y; uint n; } p;
#endif
void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.n) return;
#if defined(F32_TO_F16)
  p.y.v[i] = float16_t(p.x.v[i]);
#elif defined(F16_TO_F32)
  p.y.v[i] = float(p.x.v[i]);
#elif defined(I64_TO_F32)
  p.y.v[i] = float(p.x.v[2 * i]);
#elif defined(I64_TO_F16)
  p.y.v[i] = float16_t(float(p.x.v[2 * i]));
#elif defined(I32_TO_F16)
  p.y.v[i] = float16_t(float(p.x.v[i]));
#else
  p.y.v[i] = float(p.x.v[i]);
#endif
}
