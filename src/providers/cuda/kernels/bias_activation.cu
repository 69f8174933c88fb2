// The com.microsoft Gelu family's device kernel: an optional bias along the last dim, then the activation.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::ToFloat;

template <typename T>
__global__ void BiasActivationKernel(BiasActivationKind kind, const T* x, const T* bias, T* y, int64_t n,
                                     int64_t width, float alpha) {
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    float v = ToFloat(x[i]);
    if (bias != nullptr) v += ToFloat(bias[i % width]);
    float out;
    switch (kind) {
      case BiasActivationKind::kGeluErf: out = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); break;
      case BiasActivationKind::kGeluTanh:
        out = 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
        break;
      default: out = v / (1.0f + expf(-alpha * v)); break;
    }
    y[i] = FromFloat<T>(out);
  }
}

}  // namespace

cudaError_t BiasActivation(BiasActivationKind kind, ElementType type, const void* x, const void* bias, void* y,
                           int64_t n, int64_t width, float alpha, cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    BiasActivationKernel<T><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
        kind, static_cast<const T*>(x), static_cast<const T*>(bias), static_cast<T*>(y), n, width, alpha);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
