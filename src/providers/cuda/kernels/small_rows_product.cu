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

constexpr int kWarpsPerBlock = device::kThreads / device::kWarp;  // 8

// Words of weights each lane loads before waiting for the kernels before it (kPrefetchWords covers a lane's whole
// share in GPT-2's products: 1-2 words).
constexpr int kPrefetchWords = 4;

// `split` warps (1, 2, 4 or 8) share one output column, each taking every split-th 32-word stretch of its weights
// row; their sums meet in shared memory. Few columns over long rows (768 outputs of 3072 inputs) then still keep
// thousands of warps, and thousands of loads, in flight.
template <typename T, int kRows>
__global__ void SmallRowsKernel(const T* a, const T* wt, T* out, int64_t n, int64_t k, int split, float alpha,
                                const T* bias, EpilogueActivation activation, const T* addend, bool early) {
  __shared__ float partial[kWarpsPerBlock][kRows];
  const int warp = threadIdx.x / device::kWarp, lane = threadIdx.x % device::kWarp;
  const int64_t column = blockIdx.x * int64_t{kWarpsPerBlock / split} + warp / split;
  const int part = warp % split;
  constexpr int kPerWord = 16 / sizeof(T);
  const int64_t words = k / kPerWord;
  const int64_t first = lane + int64_t{device::kWarp} * part, stride = int64_t{device::kWarp} * split;
  const uint4* w = reinterpret_cast<const uint4*>(wt + column * k);
  // The weights are constant (never written by a kernel on the stream), so their first words are loaded before
  // waiting: the memory's latency then overlaps the end of the kernel before instead of following it.
  uint4 ahead[kPrefetchWords];
  const auto load_ahead = [&] {
    if (column < n) {
#pragma unroll
      for (int j = 0; j < kPrefetchWords; ++j)
        if (first + j * stride < words) ahead[j] = LoadStreaming(w + first + j * stride);
    }
  };
  if (early) load_ahead();
  device::WaitForPrerequisites();
  if (!early) load_ahead();
  device::AllowDependents();
  float sum[kRows] = {};
  if (column < n) {
    const uint4* x = reinterpret_cast<const uint4*>(a);
#pragma unroll
    for (int j = 0; j < kPrefetchWords; ++j) {
      const int64_t i = first + j * stride;
      if (i < words) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) sum[r] += Dot(ahead[j], x[r * words + i], T{});
      }
    }
#pragma unroll 4
    for (int64_t i = first + kPrefetchWords * stride; i < words; i += stride) {
      const uint4 weights = LoadStreaming(w + i);
#pragma unroll
      for (int r = 0; r < kRows; ++r) sum[r] += Dot(weights, x[r * words + i], T{});
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    for (int offset = device::kWarp / 2; offset > 0; offset /= 2) sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], offset);
  if (split > 1) {
    if (lane == 0)
      for (int r = 0; r < kRows; ++r) partial[warp][r] = sum[r];
    __syncthreads();
    if (part != 0 || lane != 0 || column >= n) return;
    for (int r = 0; r < kRows; ++r)
      for (int p = 1; p < split; ++p) sum[r] += partial[warp + p][r];
  } else if (lane != 0 || column >= n) {
    return;
  }
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
  // Warps per column: enough warps in flight (~4096 on the H100's 132 SMs) while each lane keeps a word to load.
  const int64_t words = k / (type == ElementType::kHalf ? 8 : 4);
  int split = 1;
  while (split < kWarpsPerBlock && n * split < 4096 && words >= int64_t{device::kWarp} * split * 2) split *= 2;
  const int64_t columns_per_block = kWarpsPerBlock / split;
  const unsigned blocks = static_cast<unsigned>((n + columns_per_block - 1) / columns_per_block);
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const T* ta = static_cast<const T*>(a);
    const T* tw = static_cast<const T*>(wt);
    T* to = static_cast<T*>(out);
    const T* tb = static_cast<const T*>(bias);
    const T* td = static_cast<const T*>(addend);
    const auto launch = [&](auto kernel) {
      return device::LaunchDependent(kernel, dim3(blocks), dim3(device::kThreads), 0, stream, ta, tw, to, n, k, split,
                                     alpha, tb, activation, td, device::EarlyConstantLoads());
    };
    switch (rows) {
      case 1: return launch(SmallRowsKernel<T, 1>);
      case 2: return launch(SmallRowsKernel<T, 2>);
      case 3: return launch(SmallRowsKernel<T, 3>);
      default: return launch(SmallRowsKernel<T, 4>);
    }
  });
}

}  // namespace tessera::cuda::launch
