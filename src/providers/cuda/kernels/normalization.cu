// BatchNormalization (inference) device kernel.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::ToFloat;

template <typename T, typename P>
__global__ void BatchNormKernel(const T* x, const P* scale, const P* bias, const P* mean, const P* var, float epsilon,
                                T* y, int64_t n, int64_t channels, int64_t spatial) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / spatial) % channels;
    const float inv_std = rsqrtf(ToFloat(var[c]) + epsilon);
    const float value = (ToFloat(x[i]) - ToFloat(mean[c])) * inv_std * ToFloat(scale[c]) + ToFloat(bias[c]);
    y[i] = FromFloat<T>(value);
  }
}

}  // namespace

cudaError_t BatchNormInference(ElementType type, ElementType param_type, const void* x, const void* scale,
                               const void* bias, const void* mean, const void* var, float epsilon, void* y,
                               int64_t batch, int64_t channels, int64_t spatial, cudaStream_t stream) {
  const int64_t n = batch * channels * spatial;
  return device::DispatchFloat(type, [&](auto x_tag) {
    using T = decltype(x_tag);
    return device::DispatchFloat(param_type, [&](auto p_tag) {
      using P = decltype(p_tag);
      BatchNormKernel<T, P><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const P*>(scale), static_cast<const P*>(bias),
          static_cast<const P*>(mean), static_cast<const P*>(var), epsilon, static_cast<T*>(y), n, channels, spatial);
      return device::LaunchStatus();
    });
  });
}

}  // namespace tessera::cuda::launch
