// The epilogue shared by FusedMatMul and channels-last Conv: over y of n elements in rows of `columns`,
//   y[i] = activation(y[i] + bias[i % columns] (+ addend[i] when kAddendFirst)) (+ addend[i] when not kAddendFirst)
// in place, bias and addend each optional, two adjacent elements per thread (a __half2 or a float2), 32-bit indices.
//
// Why two elements per thread: such an epilogue reads a product that is still in L2, so it is bound by the latency of
// each thread's instruction chain, not by memory. With 16-byte words per thread BERT-base's FFN epilogue (128 x 3072
// float16, bias + GELU) was 49k threads, ~3 warps per scheduler each issuing ~475 dependent instructions: 3.6 us in
// the graph (ncu: 13% issue-slot use, 12.5 cycles per issued instruction). Pairs give 4x the warps and a quarter of
// the chain each: 2.1 us. The activation is a template argument for the kinds models carry most (no switch per
// element).
#pragma once

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::device {

template <typename T>
struct PairOf;
template <>
struct PairOf<__half> {
  using type = __half2;
  __device__ static float2 Load(const __half2& p) { return __half22float2(p); }
  __device__ static __half2 Store(float2 v) { return __floats2half2_rn(v.x, v.y); }
};
template <>
struct PairOf<float> {
  using type = float2;
  __device__ static float2 Load(const float2& p) { return p; }
  __device__ static float2 Store(float2 v) { return v; }
};

// Activate with the kind fixed at compile time (kKind >= 0) or read from `a` (kKind < 0).
template <int kKind>
__device__ __forceinline__ float ActivateAs(const launch::EpilogueActivation& a, float x) {
  if constexpr (kKind < 0) {
    return Activate(a, x);
  } else {
    launch::EpilogueActivation fixed = a;
    fixed.kind = static_cast<launch::EpilogueActivation::Kind>(kKind);
    return Activate(fixed, x);
  }
}

template <typename T, int kKind, bool kAddendFirst>
__global__ void PairEpilogueKernel(T* y, uint32_t pairs, uint32_t row_pairs, const T* bias,
                                   launch::EpilogueActivation activation, const T* addend) {
  using Pair = typename PairOf<T>::type;
  Pair* yp = reinterpret_cast<Pair*>(y);
  const Pair* bp = reinterpret_cast<const Pair*>(bias);
  const Pair* ap = reinterpret_cast<const Pair*>(addend);
  for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < pairs; p += gridDim.x * blockDim.x) {
    float2 v = PairOf<T>::Load(yp[p]);
    if (bias != nullptr) {
      const float2 b = PairOf<T>::Load(__ldg(bp + p % row_pairs));
      v.x += b.x;
      v.y += b.y;
    }
    float2 a = make_float2(0.0f, 0.0f);
    if (addend != nullptr) a = PairOf<T>::Load(ap[p]);
    if constexpr (kAddendFirst) {
      v.x += a.x;
      v.y += a.y;
    }
    v.x = ActivateAs<kKind>(activation, v.x);
    v.y = ActivateAs<kKind>(activation, v.y);
    if constexpr (!kAddendFirst) {
      v.x += a.x;
      v.y += a.y;
    }
    yp[p] = PairOf<T>::Store(v);
  }
}

// Whether PairEpilogue takes these operands: rows of an even length, pair-aligned pointers, n / 2 within 31 bits.
template <typename T>
bool PairEpilogueFits(const void* y, int64_t n, int64_t columns, const void* bias, const void* addend) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % (2 * sizeof(T)) == 0; };
  return columns > 0 && columns % 2 == 0 && n % columns == 0 && n / 2 < (int64_t{1} << 31) && aligned(y) &&
         aligned(bias) && aligned(addend);
}

template <typename T, bool kAddendFirst>
cudaError_t PairEpilogue(T* y, int64_t n, int64_t columns, const T* bias, const launch::EpilogueActivation& activation,
                         const T* addend, cudaStream_t stream) {
  const auto pairs = static_cast<uint32_t>(n / 2);
  const auto row_pairs = static_cast<uint32_t>(columns / 2);
  const unsigned blocks = BlocksFor(pairs);
  using Kind = launch::EpilogueActivation::Kind;
  const auto launch = [&](auto kernel) {
    kernel<<<blocks, kThreads, 0, stream>>>(y, pairs, row_pairs, bias, activation, addend);
    return LaunchStatus();
  };
  switch (activation.kind) {
    case Kind::kNone: return launch(PairEpilogueKernel<T, static_cast<int>(Kind::kNone), kAddendFirst>);
    case Kind::kRelu: return launch(PairEpilogueKernel<T, static_cast<int>(Kind::kRelu), kAddendFirst>);
    case Kind::kClip: return launch(PairEpilogueKernel<T, static_cast<int>(Kind::kClip), kAddendFirst>);
    case Kind::kGelu: return launch(PairEpilogueKernel<T, static_cast<int>(Kind::kGelu), kAddendFirst>);
    case Kind::kSwish: return launch(PairEpilogueKernel<T, static_cast<int>(Kind::kSwish), kAddendFirst>);
    default: return launch(PairEpilogueKernel<T, -1, kAddendFirst>);
  }
}

}  // namespace tessera::cuda::device
