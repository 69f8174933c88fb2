#version 450
// The application's pre-processing: 8-bit RGBA pixels (one uint per pixel) -> float planes [1, 3, H, W] in [0, 1].
#extension GL_EXT_buffer_reference : require
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Pixels { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(local_size_x = 256) in;
layout(push_constant) uniform Params { Pixels rgba; Floats planes; uint pixels; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= p.pixels) return;
  uint rgba = p.rgba.v[i];
  for (uint c = 0; c < 3; ++c) p.planes.v[c * p.pixels + i] = float((rgba >> (8 * c)) & 255u) / 255.0;
}
