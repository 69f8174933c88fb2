// com.microsoft GroupQueryAttention's parts around the fused attention kernel (attention.h): the present caches with
// the new (rotated) key rows, the rotated query, and the additive bias of each item's causal window. Every item's
// length comes from seqlens_k on the device, so nothing waits for the host.
#include <cuda_fp16.h>

#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

__device__ __forceinline__ int64_t PastOf(const GqaArgs& a, int64_t b) {
  const int64_t length = int64_t{a.seqlens[b]} + 1;
  const int64_t past = a.first_prompt ? 0 : length - a.s;
  return past < 0 ? 0 : past;
}

__device__ __forceinline__ int64_t KeysOf(const GqaArgs& a, int64_t b) { return int64_t{a.seqlens[b]} + 1; }

// Feature f of the row at `in` rotated at `position` (RotaryEmbedding's formula; features past `rot` pass through).
template <typename T>
__device__ __forceinline__ T Rotated(const GqaArgs& a, const T* in, int64_t f, int64_t position) {
  if (f >= a.rot) return in[f];
  const int64_t half = a.rot / 2;
  const bool first = a.interleaved ? f % 2 == 0 : f < half;
  const int64_t j = a.interleaved ? f / 2 : f % half;
  const int64_t i1 = a.interleaved ? 2 * j : j, i2 = a.interleaved ? 2 * j + 1 : j + half;
  int64_t row = position < 0 ? 0 : position;
  row = row >= a.rotary_rows ? a.rotary_rows - 1 : row;  // the device cannot report it; the host checks what it can
  const float c = device::ToFloat(static_cast<const T*>(a.cos)[row * half + j]);
  const float s = device::ToFloat(static_cast<const T*>(a.sin)[row * half + j]);
  const float x1 = device::ToFloat(in[i1]), x2 = device::ToFloat(in[i2]);
  return device::FromFloat<T>(first ? c * x1 - s * x2 : s * x1 + c * x2);
}

struct Strides3 {
  int64_t v[3];
};

template <typename T>
__global__ void PresentKernel(GqaArgs a, const T* past, const T* x, Strides3 xs, bool rotate, bool in_place, T* present) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t n = a.batch * a.kv_heads * a.present_rows * a.head;
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t f = i % a.head;
    const int64_t r = (i / a.head) % a.present_rows;
    const int64_t h = (i / (a.head * a.present_rows)) % a.kv_heads;
    const int64_t b = i / (a.head * a.present_rows * a.kv_heads);
    const int64_t past_b = PastOf(a, b);
    if (r >= past_b && r < past_b + a.s) {
      const T* row = x + b * xs.v[0] + h * xs.v[1] + (r - past_b) * xs.v[2];
      present[i] = rotate ? Rotated(a, row, f, r) : row[f];
    } else if (!in_place) {
      present[i] = r < past_b && r < a.past_rows && past != nullptr
                       ? past[((b * a.kv_heads + h) * a.past_rows + r) * a.head + f]
                       : device::FromFloat<T>(0.0f);
    }
  }
}

template <typename T>
__global__ void RotateQueryKernel(GqaArgs a, const T* q, Strides3 qs, T* out) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t n = a.batch * a.s * a.q_heads * a.head;
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t f = i % a.head;
    const int64_t h = (i / a.head) % a.q_heads;
    const int64_t s = (i / (a.head * a.q_heads)) % a.s;
    const int64_t b = i / (a.head * a.q_heads * a.s);
    out[i] = Rotated(a, q + b * qs.v[0] + h * qs.v[1] + s * qs.v[2], f, PastOf(a, b) + s);
  }
}

template <typename T>
__global__ void BiasKernel(GqaArgs a, int64_t window, T* bias) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t n = a.batch * a.s * a.present_rows;
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t j = i % a.present_rows;
    const int64_t s = (i / a.present_rows) % a.s;
    const int64_t b = i / (a.present_rows * a.s);
    const int64_t p = PastOf(a, b) + s;
    const bool readable = j <= p && j < KeysOf(a, b) && (window <= 0 || j > p - window);
    bias[i] = device::FromFloat<T>(readable ? 0.0f : -INFINITY);
  }
}

}  // namespace

cudaError_t GqaPresent(const GqaArgs& args, const void* past, const void* x, const int64_t x_strides[3], bool rotate,
                       bool in_place, void* present, cudaStream_t stream) {
  if (rotate && (args.rot <= 0 || args.cos == nullptr || args.sin == nullptr)) return cudaErrorInvalidValue;
  const int64_t n = args.batch * args.kv_heads * args.present_rows * args.head;
  if (n == 0) return cudaSuccess;
  const Strides3 xs{{x_strides[0], x_strides[1], x_strides[2]}};
  return device::DispatchFloat(args.type, [&](auto tag) {
    using T = decltype(tag);
    return device::LaunchDependent(PresentKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                                   args, static_cast<const T*>(past), static_cast<const T*>(x), xs, rotate, in_place,
                                   static_cast<T*>(present));
  });
}

cudaError_t GqaRotateQuery(const GqaArgs& args, const void* q, const int64_t q_strides[3], void* q_out,
                           cudaStream_t stream) {
  if (args.rot <= 0 || args.cos == nullptr || args.sin == nullptr) return cudaErrorInvalidValue;
  const int64_t n = args.batch * args.s * args.q_heads * args.head;
  if (n == 0) return cudaSuccess;
  const Strides3 qs{{q_strides[0], q_strides[1], q_strides[2]}};
  return device::DispatchFloat(args.type, [&](auto tag) {
    using T = decltype(tag);
    return device::LaunchDependent(RotateQueryKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0,
                                   stream, args, static_cast<const T*>(q), qs, static_cast<T*>(q_out));
  });
}

cudaError_t GqaBias(const GqaArgs& args, int64_t window, void* bias, cudaStream_t stream) {
  const int64_t n = args.batch * args.s * args.present_rows;
  if (n == 0) return cudaSuccess;
  return device::DispatchFloat(args.type, [&](auto tag) {
    using T = decltype(tag);
    return device::LaunchDependent(BiasKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream, args,
                                   window, static_cast<T*>(bias));
  });
}

}  // namespace tessera::cuda::launch
