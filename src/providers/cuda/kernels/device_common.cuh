// Device-side helpers shared by the CUDA EP's *.cu files: float <-> storage conversion, launch sizing
// and type dispatch for launch::ElementType.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "providers/cuda/kernels/launch.h"

namespace tessera::cuda::device {

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) { return __float2half_rn(v); }

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (capped: each thread then handles several).
inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

// Calls fn(T{}) with T = float or __half.
template <typename Fn>
cudaError_t DispatchFloat(launch::ElementType type, Fn&& fn) {
  if (type == launch::ElementType::kHalf) return fn(__half{});
  return fn(float{});
}

inline cudaError_t LaunchStatus() { return cudaGetLastError(); }

}  // namespace tessera::cuda::device
