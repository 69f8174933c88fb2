// ai.onnx Attention's part around the fused attention kernel (attention.h): the additive bias that combines a short or
// broadcast mask with causal masking (its present caches come from multi_head_attention.cu's RowsInHeads).
#include <cuda_fp16.h>

#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

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
