// Float16 and bfloat16 for every float kernel of the CPU EP. A kernel registered for float32 but not for a
// 16-bit float type gets a second registration for that type whose kernel computes in float32 inside the
// node: constant inputs (weights) are widened once when the kernel is created, other 16-bit inputs when it
// runs, and float32 results are rounded to the node's 16-bit output type. The graph keeps its 16-bit values
// between nodes (no Cast nodes, no float32 copies of activations beyond the node's own scratch).
#pragma once

#include "tessera/ep/kernel.h"

namespace tessera::cpu {

// Adds the float32-compute registrations to `registry` for every registration that accepts float32 on a
// type-constrained input but not float16 (or bfloat16). Call once, after every native kernel is registered
// (a native 16-bit kernel always wins: registrations are tried in order).
void AddFloatComputeAdapters(KernelRegistry& registry);

}  // namespace tessera::cpu
