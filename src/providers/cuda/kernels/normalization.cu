// BatchNormalization (inference), LayerNormalization and RMS normalization device kernels.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::BlockSum;
using device::ToFloat;
using device::kWarp;

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


// One block per row: the mean, then the variance around it (two passes, numerically robust), then the
// output; the row is re-read from L1/L2, which for transformer widths is far cheaper than DRAM.
template <typename T, typename P, typename Q>
__global__ void LayerNormKernel(const T* x, const P* scale, const Q* bias, float epsilon, T* y, int64_t length) {
  __shared__ float partial[kWarp];
  const T* in = x + blockIdx.x * length;
  T* out = y + blockIdx.x * length;
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < length; j += blockDim.x) sum += ToFloat(in[j]);
  const float mean = BlockSum(sum, partial) / static_cast<float>(length);
  float squares = 0.0f;
  for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
    const float d = ToFloat(in[j]) - mean;
    squares += d * d;
  }
  const float inv_std = rsqrtf(BlockSum(squares, partial) / static_cast<float>(length) + epsilon);
  for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
    const float shift = bias != nullptr ? ToFloat(bias[j]) : 0.0f;
    out[j] = FromFloat<T>((ToFloat(in[j]) - mean) * inv_std * ToFloat(scale[j]) + shift);
  }
}

// One block per row: the residual sum (rounded to T per addition), its mean square, then the output.
template <typename T, typename P>
__global__ void RmsNormKernel(const T* x, const T* skip, const T* bias, const P* scale, float epsilon, T* y, T* sum,
                              float* inv_std, int64_t length) {
  __shared__ float partial[kWarp];
  const int64_t row = blockIdx.x * length;
  const auto value = [&](int64_t j) {
    float v = ToFloat(x[row + j]);
    if (skip != nullptr) v = ToFloat(FromFloat<T>(v + ToFloat(skip[row + j])));
    if (bias != nullptr) v = ToFloat(FromFloat<T>(v + ToFloat(bias[j])));
    return v;
  };
  float squares = 0.0f;
  for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
    const float v = value(j);
    if (sum != nullptr) sum[row + j] = FromFloat<T>(v);
    squares += v * v;
  }
  const float inv = rsqrtf(BlockSum(squares, partial) / static_cast<float>(length) + epsilon);
  if (inv_std != nullptr && threadIdx.x == 0) inv_std[blockIdx.x] = inv;
  for (int64_t j = threadIdx.x; j < length; j += blockDim.x) y[row + j] = FromFloat<T>(value(j) * inv * ToFloat(scale[j]));
}

}  // namespace

cudaError_t RmsNorm(ElementType type, ElementType scale_type, const void* x, const void* skip, const void* bias,
                    const void* scale, float epsilon, void* y, void* sum, float* inv_std, int64_t rows, int64_t length,
                    cudaStream_t stream) {
  const unsigned threads = length <= 256 ? 64 : length <= 1024 ? 128 : 256;
  return device::DispatchFloat(type, [&](auto x_tag) {
    using T = decltype(x_tag);
    return device::DispatchFloat(scale_type, [&](auto p_tag) {
      using P = decltype(p_tag);
      RmsNormKernel<T, P><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(skip), static_cast<const T*>(bias),
          static_cast<const P*>(scale), epsilon, static_cast<T*>(y), static_cast<T*>(sum), inv_std, length);
      return device::LaunchStatus();
    });
  });
}

cudaError_t LayerNorm(ElementType type, ElementType scale_type, ElementType bias_type, const void* x,
                      const void* scale, const void* bias, float epsilon, void* y, int64_t rows, int64_t length,
                      cudaStream_t stream) {
  const unsigned threads = length <= 256 ? 64 : length <= 1024 ? 128 : 256;
  return device::DispatchFloat(type, [&](auto x_tag) {
    using T = decltype(x_tag);
    return device::DispatchFloat(scale_type, [&](auto p_tag) {
      using P = decltype(p_tag);
      return device::DispatchFloat(bias_type, [&](auto q_tag) {
        using Q = decltype(q_tag);
        LayerNormKernel<T, P, Q><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
            static_cast<const T*>(x), static_cast<const P*>(scale), static_cast<const Q*>(bias), epsilon,
            static_cast<T*>(y), length);
        return device::LaunchStatus();
      });
    });
  });
}

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
