// Pooling device kernels: 2-D max / average windows (1-D pooling uses a height of 1) and global
// average pooling, over NCHW or channels-last (NHWC) tensors.
#include <cfloat>
#include <cstdint>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::ToFloat;

// One thread per output element.
template <typename T>
__global__ void Pool2dKernel(PoolOp op, const T* x, T* y, Pool2dGeometry g, int64_t n) {
  // NCHW: in[h * in_w + w] of the output's plane; channels last: in[(h * in_w + w) * channels] from the output's
  // image and channel.
  const int64_t channels = g.channels > 0 ? g.channels : 1;
  const int64_t pixel_stride = channels;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = i % channels;
    const int64_t pixel = i / channels;
    const int64_t ow = pixel % g.out_w;
    const int64_t oh = (pixel / g.out_w) % g.out_h;
    const int64_t plane = pixel / (g.out_w * g.out_h);
    const T* in = x + plane * g.in_h * g.in_w * channels + c;
    const int64_t h0 = oh * g.stride_h - g.pad_top;
    const int64_t w0 = ow * g.stride_w - g.pad_left;
    float best = -FLT_MAX, sum = 0.0f;
    int64_t count = 0;
    bool any = false;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t h = h0 + kh * g.dilation_h;
      if (h < 0 || h >= g.in_h) continue;
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t w = w0 + kw * g.dilation_w;
        if (w < 0 || w >= g.in_w) continue;
        const float v = ToFloat(in[(h * g.in_w + w) * pixel_stride]);
        best = fmaxf(best, v);
        sum += v;
        ++count;
        any = true;
      }
    }
    float result;
    if (op == PoolOp::kMax) {
      result = any ? best : -INFINITY;
    } else if (op == PoolOp::kAverageIncludePad) {
      // The divisor counts padding but not positions past the padded input (ceil_mode windows).
      const int64_t h_end = min(h0 + (g.kernel_h - 1) * g.dilation_h + 1, g.in_h + g.pad_bottom);
      const int64_t w_end = min(w0 + (g.kernel_w - 1) * g.dilation_w + 1, g.in_w + g.pad_right);
      const int64_t rows = (h_end - h0 + g.dilation_h - 1) / g.dilation_h;
      const int64_t cols = (w_end - w0 + g.dilation_w - 1) / g.dilation_w;
      result = rows * cols > 0 ? sum / static_cast<float>(rows * cols) : 0.0f;
    } else {
      result = count > 0 ? sum / static_cast<float>(count) : 0.0f;
    }
    y[i] = FromFloat<T>(result);
  }
}

// Channels last with whole 16-byte words of channels: one thread per word of an output pixel (8 float16 or 4 float32
// channels per load, 32-bit index arithmetic), the same windows and results as Pool2dKernel. ResNet-50's max pool
// after its stem (64 channels, 112x112 -> 56x56) took 9 us one element per thread, its 64-bit divisions included.
struct WordPoolGeometry {
  int words, in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
  int pad_top, pad_left, pad_bottom, pad_right;
};

template <typename T>
__global__ void Pool2dChannelsLastWordKernel(PoolOp op, const uint4* x, uint4* y, WordPoolGeometry g, int n) {
  constexpr int kPerWord = device::kWordElements<T>;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int word = i % g.words, pixel = i / g.words;
    const int ow = pixel % g.out_w, rest = pixel / g.out_w;
    const int oh = rest % g.out_h, image = rest / g.out_h;
    const uint4* in = x + static_cast<int64_t>(image) * g.in_h * g.in_w * g.words + word;
    const int h0 = oh * g.stride_h - g.pad_top, w0 = ow * g.stride_w - g.pad_left;
    float best[kPerWord], sum[kPerWord];
#pragma unroll
    for (int e = 0; e < kPerWord; ++e) {
      best[e] = -FLT_MAX;
      sum[e] = 0.0f;
    }
    int count = 0;
    for (int kh = 0; kh < g.kernel_h; ++kh) {
      const int h = h0 + kh * g.dilation_h;
      if (h < 0 || h >= g.in_h) continue;
      for (int kw = 0; kw < g.kernel_w; ++kw) {
        const int w = w0 + kw * g.dilation_w;
        if (w < 0 || w >= g.in_w) continue;
        float v[kPerWord];
        device::UnpackWord(in[(h * g.in_w + w) * g.words], v, T{});
#pragma unroll
        for (int e = 0; e < kPerWord; ++e) {
          best[e] = fmaxf(best[e], v[e]);
          sum[e] += v[e];
        }
        ++count;
      }
    }
    float result[kPerWord];
    float divisor = static_cast<float>(count);
    if (op == PoolOp::kAverageIncludePad) {
      const int h_end = min(h0 + (g.kernel_h - 1) * g.dilation_h + 1, g.in_h + g.pad_bottom);
      const int w_end = min(w0 + (g.kernel_w - 1) * g.dilation_w + 1, g.in_w + g.pad_right);
      const int rows = (h_end - h0 + g.dilation_h - 1) / g.dilation_h;
      const int cols = (w_end - w0 + g.dilation_w - 1) / g.dilation_w;
      divisor = static_cast<float>(rows * cols);
    }
#pragma unroll
    for (int e = 0; e < kPerWord; ++e) {
      if (op == PoolOp::kMax) result[e] = count > 0 ? best[e] : -INFINITY;
      else result[e] = divisor > 0.0f ? sum[e] / divisor : 0.0f;
    }
    y[i] = device::PackWord(result, T{});
  }
}

// Whether the word kernel takes `g` for elements of `element_size` bytes: channels last in whole aligned words, every
// index within 32 bits.
bool WordPoolFits(const Pool2dGeometry& g, size_t element_size, const void* x, const void* y) {
  const int64_t per_word = 16 / static_cast<int64_t>(element_size);
  if (g.channels <= 0 || g.channels % per_word != 0) return false;
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(y) % 16 != 0) return false;
  const int64_t words = g.channels / per_word;
  const int64_t limit = INT32_MAX / 4;
  for (int64_t v : {g.stride_h * g.out_h, g.stride_w * g.out_w, g.kernel_h * g.dilation_h, g.kernel_w * g.dilation_w,
                    g.pad_top, g.pad_left, g.pad_bottom, g.pad_right})
    if (v >= limit) return false;
  return g.planes * g.in_h * g.in_w * words < limit && g.planes * g.out_h * g.out_w * words < limit;
}

// One block per plane; threads stride over the plane and reduce through shared memory.
template <typename T>
__global__ void GlobalAverageKernel(const T* x, T* y, int64_t spatial) {
  __shared__ float partial[device::kThreads];
  const T* in = x + blockIdx.x * spatial;
  float sum = 0.0f;
  for (int64_t s = threadIdx.x; s < spatial; s += blockDim.x) sum += ToFloat(in[s]);
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = FromFloat<T>(partial[0] / static_cast<float>(spatial));
}

// Channels-last global average, pass 1: block (32 channels, kRows positions) of grid (chunk, channel tile, image) sums
// its chunk of positions per channel (neighbouring threads read neighbouring channels of a pixel) into
// partial[image][chunk][channel].
constexpr int kRows = 8;
constexpr int64_t kPositionsPerChunk = 128;
constexpr int64_t kMaxChunks = 256;

int64_t ChunksOf(int64_t spatial) {
  const int64_t chunks = (spatial + kPositionsPerChunk - 1) / kPositionsPerChunk;
  return chunks < 1 ? 1 : (chunks > kMaxChunks ? kMaxChunks : chunks);
}

template <typename T>
__global__ void GlobalAverageChannelsLastPartialKernel(const T* x, float* partial, int64_t spatial, int64_t channels,
                                                       int64_t chunk_size) {
  __shared__ float sums[kRows][32];
  const int64_t c = static_cast<int64_t>(blockIdx.y) * 32 + threadIdx.x;
  const int64_t image = blockIdx.z, chunk = blockIdx.x;
  const int64_t begin = chunk * chunk_size;
  const int64_t end = begin + chunk_size < spatial ? begin + chunk_size : spatial;
  float sum = 0.0f;
  if (c < channels) {
    const T* in = x + image * spatial * channels + c;
    for (int64_t s = begin + threadIdx.y; s < end; s += kRows) sum += ToFloat(in[s * channels]);
  }
  sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float total = 0.0f;
    for (int r = 0; r < kRows; ++r) total += sums[r][threadIdx.x];
    partial[(image * gridDim.x + chunk) * channels + c] = total;
  }
}

// Pass 2: one thread per (image, channel) adds its chunks in order.
template <typename T>
__global__ void GlobalAverageChannelsLastFinishKernel(const float* partial, T* y, int64_t batch, int64_t chunks,
                                                      int64_t spatial, int64_t channels) {
  const int64_t n = batch * channels;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t image = i / channels, c = i % channels;
    float sum = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) sum += partial[(image * chunks + k) * channels + c];
    y[i] = FromFloat<T>(sum / static_cast<float>(spatial));
  }
}

}  // namespace

int64_t GlobalAveragePoolChannelsLastScratch(int64_t batch, int64_t spatial, int64_t channels) {
  return batch * ChunksOf(spatial) * channels;
}

cudaError_t GlobalAveragePoolChannelsLast(ElementType type, const void* x, void* y, int64_t batch, int64_t spatial,
                                          int64_t channels, float* partial, cudaStream_t stream) {
  const int64_t chunks = ChunksOf(spatial);
  const int64_t chunk_size = (spatial + chunks - 1) / chunks;
  if (batch > 65535 || (channels + 31) / 32 > 65535) return cudaErrorInvalidValue;
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>((channels + 31) / 32),
                    static_cast<unsigned>(batch));
    GlobalAverageChannelsLastPartialKernel<T><<<grid, dim3(32, kRows), 0, stream>>>(static_cast<const T*>(x), partial,
                                                                                    spatial, channels, chunk_size);
    const int64_t n = batch * channels;
    GlobalAverageChannelsLastFinishKernel<T><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
        partial, static_cast<T*>(y), batch, chunks, spatial, channels);
    return device::LaunchStatus();
  });
}

cudaError_t Pool2d(PoolOp op, ElementType type, const void* x, void* y, const Pool2dGeometry& geometry,
                   cudaStream_t stream) {
  const int64_t n = geometry.planes * geometry.out_h * geometry.out_w * (geometry.channels > 0 ? geometry.channels : 1);
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (WordPoolFits(geometry, sizeof(T), x, y)) {
      const Pool2dGeometry& g = geometry;
      const int words = static_cast<int>(g.channels / device::kWordElements<T>);
      const WordPoolGeometry w{words,
                               static_cast<int>(g.in_h),       static_cast<int>(g.in_w),
                               static_cast<int>(g.out_h),      static_cast<int>(g.out_w),
                               static_cast<int>(g.kernel_h),   static_cast<int>(g.kernel_w),
                               static_cast<int>(g.stride_h),   static_cast<int>(g.stride_w),
                               static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w),
                               static_cast<int>(g.pad_top),    static_cast<int>(g.pad_left),
                               static_cast<int>(g.pad_bottom), static_cast<int>(g.pad_right)};
      const int total = static_cast<int>(g.planes * g.out_h * g.out_w * words);
      Pool2dChannelsLastWordKernel<T><<<device::BlocksFor(total), device::kThreads, 0, stream>>>(
          op, static_cast<const uint4*>(x), static_cast<uint4*>(y), w, total);
      return device::LaunchStatus();
    }
    Pool2dKernel<T><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(op, static_cast<const T*>(x),
                                                                            static_cast<T*>(y), geometry, n);
    return device::LaunchStatus();
  });
}

cudaError_t GlobalAveragePool(ElementType type, const void* x, void* y, int64_t planes, int64_t spatial,
                              cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    // Planes beyond the grid limit do not occur for NCHW inputs of realistic size (2^31 - 1 blocks).
    GlobalAverageKernel<T><<<static_cast<unsigned>(planes), device::kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), spatial);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
