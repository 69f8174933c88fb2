// Depthwise 2-D convolution over channels-last tensors with Conv's epilogue (bias, same-shape residual,
// activation) in the same pass: one launch per node, where cuDNN takes an execution call plus an epilogue kernel.
//
// A thread computes `V` adjacent channels (one 16-byte access where the channel count and every pointer allow it:
// 4 floats or 8 halves) of `P` consecutive output pixels of one row, so a warp reads and writes contiguous channel
// runs, each filter tap's V weights are loaded once for P outputs, and the input columns that neighbouring outputs
// share come from L1. Sums are kept in float.
//
// Two kernels. DepthwiseWindow takes the common windows (3 x 3 and 5 x 5, dilation 1, stride 1 or 2 along W): the
// window and the input columns of a thread's P outputs are compile-time, so every load a thread makes (its filter
// and its input window) is issued before the first sum, and a thread pays about one memory latency. The general
// DepthwiseChannelsLast walks any window in runtime loops, where each tap's loads wait for the one before; V and P
// shrink for its small outputs, so that enough threads stay in flight to hide memory latency (the one-pixel,
// two-channel kernel it replaced took 30 us for PP-OCRv4's 320x320x16 map and 20 us for a 40x40x192 5x5 one on the
// H100; it in turn took 6-10 us per MobileNetV2 layer inside a CUDA graph on an H200).
#include <type_traits>

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

// DepthwiseWindow's code must stay small: fully unrolled, a thread's work is one straight run of instructions, and
// a general activation inlined at each of its 72-144 input values made 400-700 KB kernels that ran 3-4x slower than
// the general kernel (instruction fetch, H200). So the input activation (the depthwise_input_activation pass makes
// Relu or Clip) is a template argument, and the output activation is inlined for none / Relu / Clip only.
enum InputActivation : int { kInputNone, kInputRelu, kInputClip };

__device__ __noinline__ float ActivateOutOfLine(EpilogueActivation a, float x) { return device::Activate(a, x); }

// device::Activate's values, with the rare activations (tanh, erf, exp) in one out-of-line function.
__device__ __forceinline__ float ActivateCompact(const EpilogueActivation& a, float x) {
  switch (a.kind) {
    case EpilogueActivation::Kind::kNone: return x;
    case EpilogueActivation::Kind::kRelu: return x > 0.0f ? x : 0.0f;
    case EpilogueActivation::Kind::kClip: return fminf(fmaxf(x, a.alpha), a.beta);
    default: return ActivateOutOfLine(a, x);
  }
}

// A KH x KW window with dilation 1 and stride SW along W (the stride along H any). The V channels' filters are
// contiguous in W ([C, 1, KH, KW]: KH * KW * V values from c * KH * KW), so the thread loads them as KH * KW accesses
// of V values. Taps outside x are read from a clamped position and replaced by zeros, so that no load sits behind a
// branch and the compiler can issue them all at once.
template <typename T, int V, int P, int KH, int KW, int SW, int kInput>
__global__ void DepthwiseWindow(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                const T* __restrict__ residual, T* __restrict__ y, DepthwiseGeometry g,
                                EpilogueActivation activation, EpilogueActivation input_activation) {
  constexpr int kTaps = KH * KW;
  constexpr int kCols = (P - 1) * SW + KW;  // input columns of the P outputs
  const int lanes = static_cast<int>(g.channels / V);
  const int out_h = static_cast<int>(g.out_h), out_w = static_cast<int>(g.out_w);
  const int in_h = static_cast<int>(g.in_h), in_w = static_cast<int>(g.in_w);
  const int strips = (out_w + P - 1) / P;
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= g.batch * out_h * int64_t{strips} * lanes) return;
  const int c = static_cast<int>(i % lanes) * V;
  int64_t rest = i / lanes;
  const int ow0 = static_cast<int>(rest % strips) * P;
  rest /= strips;
  const int oh = static_cast<int>(rest % out_h);
  const int64_t n = rest / out_h;

  Lanes<T, V> filter[kTaps];  // value f of access a: channel c + (a V + f) / kTaps, tap (a V + f) % kTaps
#pragma unroll
  for (int a = 0; a < kTaps; ++a) filter[a] = *reinterpret_cast<const Lanes<T, V>*>(w + int64_t{c} * kTaps + a * V);
  const auto weight = [&](int v, int tap) {
    const int at = v * kTaps + tap;
    return ToFloat(filter[at / V].v[at % V]);
  };

  const int h0 = oh * g.stride_h - g.pad_h, w0 = ow0 * SW - g.pad_w;
  Lanes<T, V> in[KH][kCols];
  bool inside[KH][kCols];
#pragma unroll
  for (int r = 0; r < KH; ++r) {
    const int ih = h0 + r;
    const bool row_inside = ih >= 0 && ih < in_h;
    const T* row = x + ((n * in_h + (row_inside ? ih : 0)) * in_w) * g.channels + c;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      const int iw = w0 + j;
      inside[r][j] = row_inside && iw >= 0 && iw < in_w;
      in[r][j] = *reinterpret_cast<const Lanes<T, V>*>(row + int64_t{inside[r][j] ? iw : 0} * g.channels);
    }
  }

  float sum[P][V];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const float b = bias != nullptr ? ToFloat(bias[c + v]) : 0.0f;
#pragma unroll
    for (int p = 0; p < P; ++p) sum[p][v] = b;
  }
#pragma unroll
  for (int r = 0; r < KH; ++r) {
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        float value = ToFloat(in[r][j].v[v]);
        if constexpr (kInput == kInputRelu) value = value > 0.0f ? value : 0.0f;
        if constexpr (kInput == kInputClip) value = fminf(fmaxf(value, input_activation.alpha), input_activation.beta);
        value = inside[r][j] ? value : 0.0f;
#pragma unroll
        for (int p = 0; p < P; ++p) {
          const int s = j - p * SW;  // the tap of output p that column j is
          if (s >= 0 && s < KW) sum[p][v] += value * weight(v, r * KW + s);
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
#pragma unroll
    for (int v = 0; v < V; ++v) {
      float value = sum[p][v];
      if (residual != nullptr) value += ToFloat(z.v[v]);
      out.v[v] = FromFloat<T>(ActivateCompact(activation, value));
    }
    *reinterpret_cast<Lanes<T, V>*>(y + at) = out;
  }
}

bool AlignedTo(const void* p, uintptr_t bytes) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// DepthwiseWindow's launch: P = 2 where that still leaves 16384 threads (the first layers of MobileNetV2), blocks
// of 64 threads for small outputs so that they spread over more multiprocessors.
template <typename T, int V, int KH, int KW, int SW, int kInput>
cudaError_t LaunchWindow(const T* x, const T* w, const T* bias, const T* residual, T* y, const DepthwiseGeometry& g,
                         const EpilogueActivation& activation, const EpilogueActivation& input_activation,
                         cudaStream_t stream) {
  const int64_t groups = g.batch * g.out_h * g.out_w * (g.channels / V);
  const auto launch = [&](auto kernel, int64_t threads) {
    const int block = threads >= (int64_t{1} << 15) ? 128 : 64;
    kernel<<<static_cast<unsigned>((threads + block - 1) / block), block, 0, stream>>>(x, w, bias, residual, y, g,
                                                                                      activation, input_activation);
  };
  constexpr bool kTwoFit = KH * KW <= 9;  // two pixels of a 5 x 5 window would need too many registers
  if (kTwoFit && g.out_w >= 2 && groups / 2 >= (int64_t{1} << 14)) {
    const int64_t threads = g.batch * g.out_h * ((g.out_w + 1) / 2) * (g.channels / V);
    launch(DepthwiseWindow<T, V, kTwoFit ? 2 : 1, KH, KW, SW, kInput>, threads);
  } else {
    launch(DepthwiseWindow<T, V, 1, KH, KW, SW, kInput>, groups);
  }
  return device::LaunchStatus();
}

// Whether DepthwiseWindow takes the geometry, and then launches it.
template <typename T, int V, int kInput>
bool TryLaunchWindow(const T* x, const T* w, const T* bias, const T* residual, T* y, const DepthwiseGeometry& g,
                     const EpilogueActivation& activation, const EpilogueActivation& input_activation,
                     cudaStream_t stream, cudaError_t* status) {
  // (One thread per output group and no grid-stride loop: outputs beyond 2^37 groups take the general kernel.)
  if (g.dilation_h != 1 || g.dilation_w != 1 || g.kernel_h != g.kernel_w || (g.stride_w != 1 && g.stride_w != 2) ||
      (g.kernel_h != 3 && g.kernel_h != 5) || !AlignedTo(w, sizeof(T) * V) ||
      g.batch * g.out_h * g.out_w * (g.channels / V) / 64 >= (int64_t{1} << 31))
    return false;
  const auto with = [&](auto kernel_tag, auto stride_tag) {
    constexpr int K = decltype(kernel_tag)::value, S = decltype(stride_tag)::value;
    *status = LaunchWindow<T, V, K, K, S, kInput>(x, w, bias, residual, y, g, activation, input_activation,
                                                           stream);
  };
  using Three = std::integral_constant<int, 3>;
  using Five = std::integral_constant<int, 5>;
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  if (g.kernel_h == 3)
    g.stride_w == 1 ? with(Three{}, One{}) : with(Three{}, Two{});
  else
    g.stride_w == 1 ? with(Five{}, One{}) : with(Five{}, Two{});
  return true;
}

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

// DepthwiseWindow with V channels per thread where it takes the geometry; false otherwise.
template <typename T, int V>
bool TryLaunchWindow(const T* x, const T* w, const T* bias, const T* residual, T* y, const DepthwiseGeometry& g,
                     const EpilogueActivation& activation, const EpilogueActivation& input_activation,
                     cudaStream_t stream, cudaError_t* status) {
  const auto with = [&](auto input_tag) {
    return TryLaunchWindow<T, V, decltype(input_tag)::value>(x, w, bias, residual, y, g, activation, input_activation,
                                                             stream, status);
  };
  switch (input_activation.kind) {
    case EpilogueActivation::Kind::kNone: return with(std::integral_constant<int, kInputNone>{});
    case EpilogueActivation::Kind::kRelu: return with(std::integral_constant<int, kInputRelu>{});
    case EpilogueActivation::Kind::kClip: return with(std::integral_constant<int, kInputClip>{});
    default: return false;  // the general kernel
  }
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
    // DepthwiseWindow: the widest access that fits (its threads issue all their loads at once, so fewer, wider
    // threads lose nothing).
    int widest_fit = kWidest;
    while (widest_fit > 1 && !fits(widest_fit)) widest_fit /= 2;
    cudaError_t status = cudaSuccess;
    const auto window = [&](auto lanes_tag) {
      constexpr int V = decltype(lanes_tag)::value;
      return TryLaunchWindow<T, V>(tx, tw, tb, tz, ty, g, activation, input_activation, stream, &status);
    };
    if (widest_fit == kWidest && window(std::integral_constant<int, kWidest>{})) return status;
    if (widest_fit == 4 && kWidest > 4 && window(std::integral_constant<int, 4>{})) return status;
    if (widest_fit == 2 && window(std::integral_constant<int, 2>{})) return status;
    if (widest_fit == 1 && window(std::integral_constant<int, 1>{})) return status;
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
