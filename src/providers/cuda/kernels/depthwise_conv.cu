// Depthwise 2-D convolution over channels-last tensors with Conv's epilogue (bias, same-shape residual,
// activation) in the same pass: one launch per node, where cuDNN takes an execution call plus an epilogue kernel.
//
// A thread computes `V` adjacent channels (one 16-byte access where the channel count and every pointer allow it:
// 4 floats or 8 halves) of `P` consecutive output pixels of one row, so a warp reads and writes contiguous channel
// runs, each filter tap's V weights are loaded once for P outputs, and the input columns that neighbouring outputs
// share come from L1. Sums are kept in float. V and P shrink for small outputs, so that enough threads stay in
// flight to hide memory latency (the one-pixel, two-channel kernel this replaces took 30 us for PP-OCRv4's
// 320x320x16 map and 20 us for a 40x40x192 5x5 one on the H100).
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

// kActivatedInput: every loaded input goes through `input_activation` first (ai.tessera::ActivatedNchwcConv); taps
// outside x still count as zeros.
template <typename T, int V, int P, bool kActivatedInput>
__global__ void DepthwiseChannelsLast(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                      const T* __restrict__ residual, T* __restrict__ y, DepthwiseGeometry g,
                                      EpilogueActivation activation, EpilogueActivation input_activation) {
  const int lanes = static_cast<int>(g.channels / V);
  const int strips = static_cast<int>((g.out_w + P - 1) / P);
  const int out_h = static_cast<int>(g.out_h), out_w = static_cast<int>(g.out_w);
  const int in_h = static_cast<int>(g.in_h), in_w = static_cast<int>(g.in_w);
  const int64_t total = g.batch * out_h * int64_t{strips} * lanes;
  const int taps = g.kernel_h * g.kernel_w;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int c = static_cast<int>(i % lanes) * V;
    int64_t rest = i / lanes;
    const int ow0 = static_cast<int>(rest % strips) * P;
    rest /= strips;
    const int oh = static_cast<int>(rest % out_h);
    const int64_t n = rest / out_h;
    float sum[P][V];
    for (int v = 0; v < V; ++v) {
      const float b = bias != nullptr ? ToFloat(bias[c + v]) : 0.0f;
      for (int p = 0; p < P; ++p) sum[p][v] = b;
    }
    const int h0 = oh * g.stride_h - g.pad_h;
    const int w0 = ow0 * g.stride_w - g.pad_w;
    for (int r = 0; r < g.kernel_h; ++r) {
      const int ih = h0 + r * g.dilation_h;
      if (ih < 0 || ih >= in_h) continue;
      const T* row = x + ((n * in_h + ih) * in_w) * g.channels + c;
      for (int s = 0; s < g.kernel_w; ++s) {
        const int tap = r * g.kernel_w + s;
        float weight[V];
        for (int v = 0; v < V; ++v) weight[v] = ToFloat(w[(c + v) * taps + tap]);
        const int first = w0 + s * g.dilation_w;
#pragma unroll
        for (int p = 0; p < P; ++p) {
          const int iw = first + p * g.stride_w;
          if (iw < 0 || iw >= in_w || (P > 1 && ow0 + p >= out_w)) continue;
          const Lanes<T, V> in = *reinterpret_cast<const Lanes<T, V>*>(row + int64_t{iw} * g.channels);
          for (int v = 0; v < V; ++v) {
            float value = ToFloat(in.v[v]);
            if constexpr (kActivatedInput) value = device::Activate(input_activation, value);
            sum[p][v] += value * weight[v];
          }
        }
      }
    }
#pragma unroll
    for (int p = 0; p < P; ++p) {
      if (P > 1 && ow0 + p >= out_w) break;
      const int64_t at = ((n * out_h + oh) * out_w + ow0 + p) * g.channels + c;  // y is [N, OH, OW, C]
      Lanes<T, V> z;
      if (residual != nullptr) z = *reinterpret_cast<const Lanes<T, V>*>(residual + at);
      Lanes<T, V> out;
      for (int v = 0; v < V; ++v) {
        float value = sum[p][v];
        if (residual != nullptr) value += ToFloat(z.v[v]);
        out.v[v] = FromFloat<T>(device::Activate(activation, value));
      }
      *reinterpret_cast<Lanes<T, V>*>(y + at) = out;
    }
  }
}

bool AlignedTo(const void* p, uintptr_t bytes) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Threads wanted in flight before a thread takes more channels or pixels (about two waves on an H100).
constexpr int64_t kEnoughThreads = int64_t{1} << 16;

template <typename T, int V, bool kActivatedInput>
cudaError_t LaunchWithLanes(const T* x, const T* w, const T* bias, const T* residual, T* y, const DepthwiseGeometry& g,
                            const EpilogueActivation& activation, const EpilogueActivation& input_activation,
                            cudaStream_t stream) {
  const int64_t lanes = g.batch * g.out_h * g.out_w * (g.channels / V);
  if (g.out_w >= 4 && lanes / 4 >= kEnoughThreads) {
    DepthwiseChannelsLast<T, V, 4, kActivatedInput><<<device::BlocksFor(lanes / 4 + 1), kThreads, 0, stream>>>(
        x, w, bias, residual, y, g, activation, input_activation);
  } else if (g.out_w >= 2 && lanes / 2 >= kEnoughThreads) {
    DepthwiseChannelsLast<T, V, 2, kActivatedInput><<<device::BlocksFor(lanes / 2 + 1), kThreads, 0, stream>>>(
        x, w, bias, residual, y, g, activation, input_activation);
  } else {
    DepthwiseChannelsLast<T, V, 1, kActivatedInput><<<device::BlocksFor(lanes), kThreads, 0, stream>>>(
        x, w, bias, residual, y, g, activation, input_activation);
  }
  return device::LaunchStatus();
}

template <typename T, int V>
cudaError_t LaunchWithLanes(const T* x, const T* w, const T* bias, const T* residual, T* y, const DepthwiseGeometry& g,
                            const EpilogueActivation& activation, const EpilogueActivation& input_activation,
                            cudaStream_t stream) {
  if (input_activation.kind == EpilogueActivation::Kind::kNone)
    return LaunchWithLanes<T, V, false>(x, w, bias, residual, y, g, activation, input_activation, stream);
  return LaunchWithLanes<T, V, true>(x, w, bias, residual, y, g, activation, input_activation, stream);
}

}  // namespace

cudaError_t DepthwiseConvChannelsLast(ElementType type, const void* x, const void* w, const void* bias,
                                      const void* residual, void* y, const DepthwiseGeometry& g,
                                      const EpilogueActivation& activation, const EpilogueActivation& input_activation,
                                      cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const auto* tx = static_cast<const T*>(x);
    const auto* tw = static_cast<const T*>(w);
    const auto* tb = static_cast<const T*>(bias);
    const auto* tz = static_cast<const T*>(residual);
    auto* ty = static_cast<T*>(y);
    // The widest access every pointer and the channel count allow, narrowed while the output has too few
    // elements to keep enough threads busy.
    constexpr int kWidest = 16 / sizeof(T);
    const int64_t outputs = g.batch * g.out_h * g.out_w * g.channels;
    int width = kWidest;
    const auto fits = [&](int v) {
      const uintptr_t bytes = v * sizeof(T);
      return g.channels % v == 0 && AlignedTo(x, bytes) && AlignedTo(y, bytes) && AlignedTo(residual, bytes);
    };
    while (width > 1 && (!fits(width) || (width > 2 && outputs / width < kEnoughThreads))) width /= 2;
    switch (width) {
      case 8:
        if constexpr (kWidest >= 8) return LaunchWithLanes<T, 8>(tx, tw, tb, tz, ty, g, activation, input_activation, stream);
        [[fallthrough]];
      case 4:
        return LaunchWithLanes<T, 4>(tx, tw, tb, tz, ty, g, activation, input_activation, stream);
      case 2:
        return LaunchWithLanes<T, 2>(tx, tw, tb, tz, ty, g, activation, input_activation, stream);
      default:
        return LaunchWithLanes<T, 1>(tx, tw, tb, tz, ty, g, activation, input_activation, stream);
    }
  });
}

}  // namespace tessera::cuda::launch
