#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {

// Placeholder until this file's kernels land.
void RegisterConvTransposeKernels(KernelRegistry& /*registry*/) {}

}  // namespace tessera::cpu
