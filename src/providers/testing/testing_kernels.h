// Kernels of the simulated device: Add, Mul (float, numpy broadcasting), Relu and MatMul (float).
//
// Compute checks shapes and allocates outputs on the host, then queues the arithmetic on the run's
// stream (ctx.stream(); inline when null) and returns without waiting. The queued work reads and writes
// device memory through its read-write view; an input outside memory the device can reach (plain host
// memory, because a copy was not inserted) is an error naming the node and input.
#pragma once

#include "tessera/ep/kernel.h"

namespace tessera::testing_ep {

void RegisterTestingKernels(KernelRegistry& registry);

}  // namespace tessera::testing_ep
