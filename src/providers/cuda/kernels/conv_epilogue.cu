// Conv's epilogue in one pass over the output: bias per channel, a same-shape residual and an activation.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {
namespace {

using device::FromFloat;
using device::kThreads;
using device::ToFloat;

__device__ __forceinline__ float Activate(const EpilogueActivation& a, float x) {
  switch (a.kind) {
    case EpilogueActivation::Kind::kNone: return x;
    case EpilogueActivation::Kind::kRelu: return x > 0.0f ? x : 0.0f;
    case EpilogueActivation::Kind::kLeakyRelu: return x >= 0.0f ? x : a.alpha * x;
    case EpilogueActivation::Kind::kClip: return fminf(fmaxf(x, a.alpha), a.beta);
    case EpilogueActivation::Kind::kSigmoid: return 1.0f / (1.0f + __expf(-x));
    case EpilogueActivation::Kind::kHardSigmoid: return fminf(fmaxf(a.alpha * x + a.beta, 0.0f), 1.0f);
    case EpilogueActivation::Kind::kHardSwish: return x * fminf(fmaxf(x / 6.0f + 0.5f, 0.0f), 1.0f);
    case EpilogueActivation::Kind::kTanh: return tanhf(x);
    case EpilogueActivation::Kind::kGelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case EpilogueActivation::Kind::kGeluTanh:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

// One block row per (batch, channel) plane: the bias is loaded once and the plane streamed.
template <typename T>
__global__ void EpilogueKernel(T* y, const T* bias, const T* residual, int64_t planes, int64_t channels,
                               int64_t spatial, EpilogueActivation activation) {
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const float b = bias != nullptr ? ToFloat(bias[plane % channels]) : 0.0f;
    T* row = y + plane * spatial;
    const T* z = residual != nullptr ? residual + plane * spatial : nullptr;
    for (int64_t s = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; s < spatial; s += int64_t{gridDim.x} * blockDim.x) {
      float v = ToFloat(row[s]) + b;
      if (z != nullptr) v += ToFloat(z[s]);
      row[s] = FromFloat<T>(Activate(activation, v));
    }
  }
}

}  // namespace

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
