// Products of a few rows (a decoding step's activations) with a constant weight matrix stored transposed: one warp
// per output column, reading that column's weights as one contiguous row in 16-byte loads, so the whole matrix
// streams through once with every load coalesced and thousands of warps in flight. cuBLAS's kernels tile for many
// rows; at one row they read the weights at a fraction of the memory's bandwidth, and split-K products add a
// reduction kernel.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

// Sum of the products of the 8 halves (or 4 floats) in two 16-byte words.
__device__ __forceinline__ float Dot(const uint4& w, const uint4& a, __half) {
  const __half2* wh = reinterpret_cast<const __half2*>(&w);
  const __half2* ah = reinterpret_cast<const __half2*>(&a);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __half22float2(wh[i]), y = __half22float2(ah[i]);
    sum = fmaf(x.x, y.x, sum);
    sum = fmaf(x.y, y.y, sum);
  }
  return sum;
}

__device__ __forceinline__ float Dot(const uint4& w, const uint4& a, float) {
  return __uint_as_float(w.x) * __uint_as_float(a.x) + __uint_as_float(w.y) * __uint_as_float(a.y) +
         __uint_as_float(w.z) * __uint_as_float(a.z) + __uint_as_float(w.w) * __uint_as_float(a.w);
}

// Weights are read once: bypass L1 (and keep them from evicting the activations, which every warp reads).
__device__ __forceinline__ uint4 LoadStreaming(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

template <typename T, int kRows>
__global__ void SmallRowsKernel(const T* a, const T* wt, T* out, int64_t n, int64_t k, float alpha, const T* bias,
                                EpilogueActivation activation, const T* addend) {
  const int64_t column = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / device::kWarp;
  const int lane = threadIdx.x % device::kWarp;
  if (column >= n) return;
  constexpr int kPerWord = 16 / sizeof(T);
  const int64_t words = k / kPerWord;
  const uint4* w = reinterpret_cast<const uint4*>(wt + column * k);
  const uint4* x = reinterpret_cast<const uint4*>(a);
  float sum[kRows] = {};
#pragma unroll 4
  for (int64_t i = lane; i < words; i += device::kWarp) {
    const uint4 weights = LoadStreaming(w + i);
#pragma unroll
    for (int r = 0; r < kRows; ++r) sum[r] += Dot(weights, x[r * words + i], T{});
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    for (int offset = device::kWarp / 2; offset > 0; offset /= 2) sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], offset);
  if (lane != 0) return;
  const float b = bias != nullptr ? device::ToFloat(bias[column]) : 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float v = device::Activate(activation, alpha * sum[r] + b);
    if (addend != nullptr) v += device::ToFloat(addend[r * n + column]);
    out[r * n + column] = device::FromFloat<T>(v);
  }
}

}  // namespace

cudaError_t SmallRowsProduct(ElementType type, const void* a, const void* wt, void* out, int rows, int64_t n,
                             int64_t k, float alpha, const void* bias, const EpilogueActivation& activation,
                             const void* addend, cudaStream_t stream) {
  if (rows < 1 || rows > kSmallProductRows) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>((n * device::kWarp + device::kThreads - 1) / device::kThreads);
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const T* ta = static_cast<const T*>(a);
    const T* tw = static_cast<const T*>(wt);
    T* to = static_cast<T*>(out);
    const T* tb = static_cast<const T*>(bias);
    const T* td = static_cast<const T*>(addend);
    switch (rows) {
      case 1: SmallRowsKernel<T, 1><<<blocks, device::kThreads, 0, stream>>>(ta, tw, to, n, k, alpha, tb, activation, td); break;
      case 2: SmallRowsKernel<T, 2><<<blocks, device::kThreads, 0, stream>>>(ta, tw, to, n, k, alpha, tb, activation, td); break;
      case 3: SmallRowsKernel<T, 3><<<blocks, device::kThreads, 0, stream>>>(ta, tw, to, n, k, alpha, tb, activation, td); break;
      default: SmallRowsKernel<T, 4><<<blocks, device::kThreads, 0, stream>>>(ta, tw, to, n, k, alpha, tb, activation, td); break;
    }
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
