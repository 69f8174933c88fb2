// The end of a split-K product (matmul.comp, conv2d.comp): each workgroup of an output tile writes its depth chunk's
// raw float sums to the partial buffer, then LastOfTile counts it in at the tile's counter (the stream's zeroed
// counters, VulkanStream::UseSplitCounters); the workgroup that arrives last sets the counter back to zero, reads
// every chunk's sums (in chunk order, so the result does not depend on arrival order) and applies the epilogue, the
// others return. The partial sums are read and written coherently, and each workgroup makes its writes visible before
// it counts itself in, so the last one sees them all. Needs the workgroup's 256 invocations (all of them call it).
// The last workgroup's reads are issued four chunks at a time (SumChunks): a loop that waited for each chunk's loads in
// turn made this scheme slower than a reduce dispatch of its own (ResNet-50 fp16 1.67 -> 2.25 ms, session 20).
#extension GL_EXT_control_flow_attributes : require
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer Partials { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer Counters { uint v[]; };
shared uint last_of_tile;  // whether this workgroup arrived last (LastOfTile)

bool LastOfTile(Counters counters, uint tile, uint splits) {
  memoryBarrierBuffer();  // this invocation's partial sums are visible to the device
  barrier();              // ... and every invocation's
  if (gl_LocalInvocationIndex == 0u) {
    uint arrived = atomicAdd(counters.v[tile], 1u);
    bool last = arrived == splits - 1u;
    if (last) counters.v[tile] = 0u;  // zero again for the stream's next split product
    last_of_tile = last ? 1u : 0u;
  }
  barrier();
  bool last = last_of_tile != 0u;
  if (last) memoryBarrierBuffer();  // the other workgroups' sums are read after their count
  return last;
}

// The total over the chunks of this invocation's 4 x 4 outputs: output (i, j) of chunk s at
// partial.v[at[i][j] + s * stride] (at ~0u: outside the product, total 0), added in chunk order.
void SumChunks(Partials partial, uint at[4][4], uint stride, uint splits, out float total[4][4]) {
  [[unroll]] for (int i = 0; i < 4; ++i)
    [[unroll]] for (int j = 0; j < 4; ++j) total[i][j] = 0.0;
  for (uint s = 0u; s < splits; s += 4u) {
    float v[4][4][4];
    [[unroll]] for (uint u = 0u; u < 4u; ++u)
      [[unroll]] for (int i = 0; i < 4; ++i)
        [[unroll]] for (int j = 0; j < 4; ++j)
          v[u][i][j] = (at[i][j] != ~0u && s + u < splits) ? partial.v[at[i][j] + (s + u) * stride] : 0.0;
    [[unroll]] for (uint u = 0u; u < 4u; ++u)
      [[unroll]] for (int i = 0; i < 4; ++i)
        [[unroll]] for (int j = 0; j < 4; ++j)
          if (s + u < splits) total[i][j] += v[u][i][j];
  }
}
