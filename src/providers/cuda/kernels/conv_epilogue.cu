// Conv's epilogue in one pass over the output: bias per channel, a same-shape residual and an activation, for
// NCHW and for channels-last (NHWC) outputs.
#include "providers/cuda/kernels/device_common.cuh"
#include "providers/cuda/kernels/pair_epilogue.cuh"

namespace tessera::cuda::launch {
namespace {

using device::FromFloat;
using device::kThreads;
using device::ToFloat;

// One block row per (batch, channel) plane: the bias is loaded once and the plane streamed.
template <typename T>
__global__ void EpilogueKernel(T* y, const T* bias, const T* residual, int64_t planes, int64_t channels,
                               int64_t spatial, EpilogueActivation activation) {
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const float b = bias != nullptr ? ToFloat(bias[plane % channels]) : 0.0f;
    T* row = y + plane * spatial;
    const T* z = residual != nullptr ? residual + plane * spatial : nullptr;
    for (int64_t s = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; s < spatial;
         s += int64_t{gridDim.x} * blockDim.x) {
      float v = ToFloat(row[s]) + b;
      if (z != nullptr) v += ToFloat(z[s]);
      row[s] = FromFloat<T>(device::Activate(activation, v));
    }
  }
}

// Channels last: element i belongs to channel i % channels (odd channel counts; even ones take pair_epilogue.cuh).
template <typename T>
__global__ void EpilogueChannelsLastKernel(T* y, const T* bias, const T* residual, int64_t n, int64_t channels,
                                           EpilogueActivation activation) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    float v = ToFloat(y[i]);
    if (bias != nullptr) v += ToFloat(bias[i % channels]);
    if (residual != nullptr) v += ToFloat(residual[i]);
    y[i] = FromFloat<T>(device::Activate(activation, v));
  }
}

}  // namespace

cudaError_t ConvEpilogueChannelsLast(ElementType type, void* y, const void* bias, const void* residual, int64_t n,
                                     int64_t channels, const EpilogueActivation& activation, cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (device::PairEpilogueFits<T>(y, n, channels, bias, residual))
      return device::PairEpilogue<T, true>(static_cast<T*>(y), n, channels, static_cast<const T*>(bias), activation,
                                           static_cast<const T*>(residual), stream);
    EpilogueChannelsLastKernel<T><<<device::BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), static_cast<const T*>(residual), n, channels, activation);
    return device::LaunchStatus();
  });
}

cudaError_t ConvEpilogue(ElementType type, void* y, const void* bias, const void* residual, int64_t batch,
                         int64_t channels, int64_t spatial, const EpilogueActivation& activation,
                         cudaStream_t stream) {
  const int64_t planes = batch * channels;
  const int64_t row_blocks = (spatial + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(row_blocks < 64 ? row_blocks : 64),
                  static_cast<unsigned>(planes < 65535 ? planes : 65535));
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    EpilogueKernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias),
                                                     static_cast<const T*>(residual), planes, channels, spatial,
                                                     activation);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
