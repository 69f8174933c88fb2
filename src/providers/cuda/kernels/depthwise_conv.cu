// Depthwise 2-D convolution over channels-last tensors with Conv's epilogue (bias, same-shape residual,
// activation) in the same pass: one launch per node, where cuDNN takes an execution call plus an epilogue kernel.
// A thread computes `V` adjacent channels of one output pixel (V = 2 when the channel count and every pointer
// allow paired loads), so a warp reads and writes contiguous channel runs; sums are kept in float.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {
namespace {

using device::FromFloat;
using device::kThreads;
using device::ToFloat;

// V adjacent elements, loaded and stored as one access.
template <typename T, int V>
struct alignas(sizeof(T) * V) Lanes {
  T v[V];
};

template <typename T, int V>
__global__ void DepthwiseChannelsLast(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                      const T* __restrict__ residual, T* __restrict__ y, DepthwiseGeometry g,
                                      EpilogueActivation activation) {
  const int64_t lanes = g.channels / V;
  const int64_t total = g.batch * g.out_h * g.out_w * lanes;
  const int taps = g.kernel_h * g.kernel_w;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i % lanes) * V;
    int64_t rest = i / lanes;
    const int64_t ow = rest % g.out_w;
    rest /= g.out_w;
    const int64_t oh = rest % g.out_h;
    const int64_t n = rest / g.out_h;
    float sum[V];
    for (int v = 0; v < V; ++v) sum[v] = bias != nullptr ? ToFloat(bias[c + v]) : 0.0f;
    const int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
    for (int r = 0; r < g.kernel_h; ++r) {
      const int64_t ih = h0 + int64_t{r} * g.dilation_h;
      if (ih < 0 || ih >= g.in_h) continue;
      const T* row = x + ((n * g.in_h + ih) * g.in_w) * g.channels + c;
      for (int s = 0; s < g.kernel_w; ++s) {
        const int64_t iw = w0 + int64_t{s} * g.dilation_w;
        if (iw < 0 || iw >= g.in_w) continue;
        const Lanes<T, V> in = *reinterpret_cast<const Lanes<T, V>*>(row + iw * g.channels);
        const int tap = r * g.kernel_w + s;
        for (int v = 0; v < V; ++v) sum[v] += ToFloat(in.v[v]) * ToFloat(w[(c + v) * taps + tap]);
      }
    }
    const int64_t at = i * V;  // y is [N, OH, OW, C]: output i's channels start here
    Lanes<T, V> z;
    if (residual != nullptr) z = *reinterpret_cast<const Lanes<T, V>*>(residual + at);
    Lanes<T, V> out;
    for (int v = 0; v < V; ++v) {
      float value = sum[v];
      if (residual != nullptr) value += ToFloat(z.v[v]);
      out.v[v] = FromFloat<T>(device::Activate(activation, value));
    }
    *reinterpret_cast<Lanes<T, V>*>(y + at) = out;
  }
}

bool AlignedTo(const void* p, uintptr_t bytes) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

cudaError_t DepthwiseConvChannelsLast(ElementType type, const void* x, const void* w, const void* bias,
                                      const void* residual, void* y, const DepthwiseGeometry& g,
                                      const EpilogueActivation& activation, cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const auto* tx = static_cast<const T*>(x);
    const auto* tw = static_cast<const T*>(w);
    const auto* tb = static_cast<const T*>(bias);
    const auto* tz = static_cast<const T*>(residual);
    auto* ty = static_cast<T*>(y);
    const uintptr_t pair = 2 * sizeof(T);
    const bool paired = g.channels % 2 == 0 && AlignedTo(x, pair) && AlignedTo(y, pair) && AlignedTo(residual, pair);
    const int64_t outputs = g.batch * g.out_h * g.out_w * g.channels;
    if (paired) {
      DepthwiseChannelsLast<T, 2><<<device::BlocksFor(outputs / 2), kThreads, 0, stream>>>(tx, tw, tb, tz, ty, g,
                                                                                          activation);
    } else {
      DepthwiseChannelsLast<T, 1><<<device::BlocksFor(outputs), kThreads, 0, stream>>>(tx, tw, tb, tz, ty, g,
                                                                                      activation);
    }
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
