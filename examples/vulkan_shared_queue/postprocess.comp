#version 450
// The application's post-processing: float planes [1, 3, H, W] -> 8-bit RGBA pixels (clamped, alpha 255).
#extension GL_EXT_buffer_reference : require
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Pixels { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(local_size_x = 256) in;
layout(push_constant) uniform Params { Floats planes; Pixels rgba; uint pixels; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= p.pixels) return;
  uint rgba = 255u << 24;
  for (uint c = 0; c < 3; ++c) rgba |= uint(clamp(p.planes.v[c * p.pixels + i], 0.0, 1.0) * 255.0 + 0.5) << (8 * c);
  p.rgba.v[i] = rgba;
}
