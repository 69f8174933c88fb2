// Kernels of the simulated device: Add, Mul (float, numpy broadcasting), Relu and MatMul (float).
//
// Compute checks shapes and allocates outputs on the host, then queues the arithmetic on the run's
// stream (ctx.stream(); inline when null) and returns without waiting. The queued work reads and writes
// device memory through its read-write view; an input outside memory the device can reach (plain host
// memory, because a copy was not inserted) is an error naming the node and input. Like a CUDA kernel, the
// queued work holds raw pointers, not the tensors: the session may free a buffer once its last use is
// queued, and stream order (or the arena's stream fences) keeps the memory from being reused under it.
#pragma once

#include "tessera/ep/kernel.h"

namespace tessera::testing_ep {

void RegisterTestingKernels(KernelRegistry& registry);

}  // namespace tessera::testing_ep
