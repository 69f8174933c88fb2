// Split-K in one dispatch, shared by matmul.comp and conv2d.comp. With splits > 1 (grids too small to fill the GPU),
// the workgroups of one output tile each sum one depth chunk. Each writes its raw float sums to the split workspace
// (VulkanStream::SplitWorkspace: kSplitCounters arrival counters, then the partial sums) and calls SplitArrive, which
// makes them visible and counts the workgroup in at the tile's counter; the last to arrive gets true, sees every
// chunk's sums, and has reset the counter to zero for the next product: it adds the chunks up and goes on to the
// shader's epilogue. No second dispatch (nor the barrier before it) is needed.
const uint kSplitCounters = 128u;  // tiles per split product: splitting happens below 128 tiles (SplitsFor)
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer SplitSpace {
  uint counters[kSplitCounters];
  float partial[];
};
shared uint split_last;

// Called by every invocation of the workgroup (uniform control flow) after it stored its partial sums.
bool SplitArrive(SplitSpace space, uint tile, uint splits) {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    uint seen = atomicAdd(space.counters[tile], 1u);
    split_last = seen + 1u == splits ? 1u : 0u;
    if (split_last != 0u) space.counters[tile] = 0u;
  }
  barrier();
  memoryBarrierBuffer();
  return split_last != 0u;
}
