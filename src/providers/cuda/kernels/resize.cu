// Resize / Upsample (resize_ops.cc): one thread per output element. Along each axis the host's taps
// (tessera/ep/resize_geometry.h: one for nearest, two for linear, four for cubic, more when antialiasing) give the
// input indices and weights of the output coordinate; the element is the weighted sum over the product of the axes'
// taps. Identity axes (a channel axis, the channel block of a blocked layout) cost no table read. Index arithmetic
// is 32-bit when both tensors have fewer than 2^31 elements.
#include <cstdint>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {
namespace {

template <typename T, typename I>
__global__ void ResizeKernel(const T* x, T* y, I n, ResizeGeometry g, const ResizeTap* table) {
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<I>(gridDim.x) * blockDim.x) {
    I rest = i, base = 0;
    float fixed_weight = 1.0f;
    bool outside = false;
    int multi = 0;  // axes with more than one tap
    const ResizeTap* axis_taps[kMaxRank];
    int axis_of[kMaxRank];
    for (int d = g.rank - 1; d >= 0; --d) {
      const I extent = static_cast<I>(g.out_dims[d]);
      const I c = rest % extent;
      rest /= extent;
      const I stride = static_cast<I>(g.in_strides[d]);
      if (g.identity[d]) {
        base += c * stride;
        continue;
      }
      const ResizeTap* t = table + g.first_tap[d] + static_cast<int64_t>(c) * g.taps[d];
      outside = outside || t[0].index < 0;
      if (g.taps[d] == 1) {
        base += static_cast<I>(t[0].index) * stride;
        fixed_weight *= t[0].weight;
      } else {
        axis_taps[multi] = t;
        axis_of[multi] = d;
        ++multi;
      }
    }
    if (outside) {
      y[i] = device::FromFloat<T>(g.extrapolation);
      continue;
    }
    if (multi == 0) {  // nearest, or linear exactly on input coordinates: one element
      y[i] = fixed_weight == 1.0f ? x[base] : device::FromFloat<T>(fixed_weight * device::ToFloat(x[base]));
      continue;
    }
    int k[kMaxRank] = {};
    float sum = 0.0f;
    for (;;) {
      I offset = base;
      float weight = fixed_weight;
      for (int j = 0; j < multi; ++j) {
        const ResizeTap tap = axis_taps[j][k[j]];
        offset += static_cast<I>(tap.index) * static_cast<I>(g.in_strides[axis_of[j]]);
        weight *= tap.weight;
      }
      sum += weight * device::ToFloat(x[offset]);
      int j = 0;
      for (; j < multi; ++j) {
        if (++k[j] < g.taps[axis_of[j]]) break;
        k[j] = 0;
      }
      if (j == multi) break;
    }
    y[i] = device::FromFloat<T>(sum);
  }
}

}  // namespace

cudaError_t Resize(ElementType type, const void* x, int64_t x_elements, void* y, int64_t n,
                   const ResizeGeometry& geometry, const ResizeTap* table, cudaStream_t stream) {
  if (geometry.rank < 1 || geometry.rank > kMaxRank) return cudaErrorInvalidValue;
  const bool narrow = n < (int64_t{1} << 31) && x_elements < (int64_t{1} << 31);
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (narrow)
      ResizeKernel<T, uint32_t><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), static_cast<uint32_t>(n), geometry, table);
    else
      ResizeKernel<T, int64_t><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n, geometry, table);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
