#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {

// Placeholder until this file's kernels land.
void RegisterResizeKernels(KernelRegistry& /*registry*/) {}

}  // namespace tessera::cpu
