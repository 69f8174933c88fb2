// ai.onnx Attention's parts around the fused attention kernel (attention.h): the present key/value caches and the
// additive bias that combines a short or broadcast mask with causal masking.
#include <cuda_fp16.h>

#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

struct ConcatGeometry {
  int64_t batch, heads, past, positions, features;
  int64_t xs[3];
};

template <typename T>
__global__ void ConcatenatePastKernel(const T* past, const T* x, T* present, ConcatGeometry g) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t total = g.past + g.positions;
  const int64_t n = g.batch * g.heads * total * g.features;
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t f = i % g.features;
    const int64_t t = (i / g.features) % total;
    const int64_t h = (i / (g.features * total)) % g.heads;
    const int64_t b = i / (g.features * total * g.heads);
    present[i] = t < g.past ? past[((b * g.heads + h) * g.past + t) * g.features + f]
                            : x[b * g.xs[0] + h * g.xs[1] + (t - g.past) * g.xs[2] + f];
  }
}

struct BiasGeometry {
  int64_t dims[4];
  int64_t mask_strides[4];
  int64_t mask_keys, past;
  bool bool_mask, causal;
};

template <typename T>
__global__ void AttentionBiasKernel(const void* mask, T* bias, BiasGeometry g) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t n = g.dims[0] * g.dims[1] * g.dims[2] * g.dims[3];
  const float masked = -INFINITY;
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t j = i % g.dims[3];
    const int64_t q = (i / g.dims[3]) % g.dims[2];
    const int64_t h = (i / (g.dims[3] * g.dims[2])) % g.dims[1];
    const int64_t b = i / (g.dims[3] * g.dims[2] * g.dims[1]);
    float value = 0.0f;
    if (mask != nullptr) {
      if (j >= g.mask_keys) {
        value = masked;
      } else {
        const int64_t at = b * g.mask_strides[0] + h * g.mask_strides[1] + q * g.mask_strides[2] + j * g.mask_strides[3];
        value = g.bool_mask ? (static_cast<const bool*>(mask)[at] ? 0.0f : masked)
                            : device::ToFloat(static_cast<const T*>(mask)[at]);
      }
    }
    if (g.causal && j > q + g.past) value = masked;
    bias[i] = device::FromFloat<T>(value);
  }
}

}  // namespace

cudaError_t ConcatenatePast(ElementType type, const void* past, const void* x, const int64_t x_strides[3], void* present,
                            int64_t batch, int64_t heads, int64_t past_positions, int64_t positions, int64_t features,
                            cudaStream_t stream) {
  if (past_positions > 0 && past == nullptr) return cudaErrorInvalidValue;
  const ConcatGeometry g{batch, heads, past_positions, positions, features, {x_strides[0], x_strides[1], x_strides[2]}};
  const int64_t n = batch * heads * (past_positions + positions) * features;
  if (n == 0) return cudaSuccess;
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return device::LaunchDependent(ConcatenatePastKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0,
                                   stream, static_cast<const T*>(past), static_cast<const T*>(x),
                                   static_cast<T*>(present), g);
  });
}

cudaError_t AttentionBias(ElementType type, const void* mask, bool bool_mask, const int64_t mask_strides[4],
                          int64_t mask_keys, bool causal, int64_t past, const int64_t dims[4], void* bias,
                          cudaStream_t stream) {
  BiasGeometry g{};
  for (int d = 0; d < 4; ++d) {
    g.dims[d] = dims[d];
    g.mask_strides[d] = mask_strides != nullptr ? mask_strides[d] : 0;
  }
  g.mask_keys = mask_keys;
  g.past = past;
  g.bool_mask = bool_mask;
  g.causal = causal;
  const int64_t n = dims[0] * dims[1] * dims[2] * dims[3];
  if (n == 0) return cudaSuccess;
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return device::LaunchDependent(AttentionBiasKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0,
                                   stream, mask, static_cast<T*>(bias), g);
  });
}

}  // namespace tessera::cuda::launch
