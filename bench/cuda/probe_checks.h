// What the one-time-cost probes (library_first_calls.cc, legacy_conv_first_calls.cc) share: milliseconds between two
// clock readings, and checks that stop the probe on the first failed CUDA / cuDNN call, naming it.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace probe {

using Clock = std::chrono::steady_clock;

inline double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

inline void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "failed: %s\n", what);
    std::exit(1);
  }
}

}  // namespace probe

#define CUDA(x) ::probe::Check((x) == cudaSuccess, #x)
#define CUDNN(x) ::probe::Check((x) == CUDNN_STATUS_SUCCESS, #x)
