// com.microsoft MultiHeadAttention's parts around the fused attention kernel (attention.h): the operands in heads
// with their projection bias (and the past before K / V), and one additive bias for the attention_bias, the key
// padding mask and unidirectional masking.
#include <cuda_fp16.h>

#include "providers/cuda/kernels/attention.h"
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

struct RowsGeometry {
  int64_t batch, heads, past, rows, features;
  int64_t xs[3];
};

template <typename T>
__global__ void RowsKernel(const T* past, const T* x, const T* bias, T* dst, RowsGeometry g) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t total = g.past + g.rows;
  const int64_t n = g.batch * g.heads * total * g.features;
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t f = i % g.features;
    const int64_t t = (i / g.features) % total;
    const int64_t h = (i / (g.features * total)) % g.heads;
    const int64_t b = i / (g.features * total * g.heads);
    if (t < g.past) {
      dst[i] = past[((b * g.heads + h) * g.past + t) * g.features + f];
    } else {
      const T value = x[b * g.xs[0] + h * g.xs[1] + (t - g.past) * g.xs[2] + f];
      dst[i] = bias == nullptr ? value
                               : device::FromFloat<T>(device::ToFloat(value) + device::ToFloat(bias[h * g.features + f]));
    }
  }
}

template <typename T>
__global__ void MhaBiasKernel(MhaBiasArgs a, T* out) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t n = a.batch * a.heads * a.s * a.total;
  const T* added = static_cast<const T*>(a.attention_bias);
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t j = i % a.total;
    const int64_t q = (i / a.total) % a.s;
    const int64_t h = (i / (a.total * a.s)) % a.heads;
    const int64_t b = i / (a.total * a.s * a.heads);
    float value = added != nullptr ? device::ToFloat(added[b * a.attention_bias_sb + h * a.attention_bias_sh + q * a.total + j])
                                   : 0.0f;
    bool padded = false;
    if (a.padding_form == 1) padded = j >= a.padding[b];
    if (a.padding_form == 2) padded = a.padding[b * a.total + j] == 0;
    if (a.padding_form == 3) padded = a.padding[(b * a.s + q) * a.total + j] == 0;
    if (padded) value += a.mask_filter;
    if (a.unidirectional && j > q + a.past) value += a.mask_filter;
    out[i] = device::FromFloat<T>(value);
  }
}

}  // namespace

cudaError_t RowsInHeads(ElementType type, const void* past, const void* x, const int64_t x_strides[3], const void* bias,
                    void* dst, int64_t batch, int64_t heads, int64_t past_rows, int64_t rows, int64_t features,
                    cudaStream_t stream) {
  if (past_rows > 0 && past == nullptr) return cudaErrorInvalidValue;
  const RowsGeometry g{batch, heads, past_rows, rows, features, {x_strides[0], x_strides[1], x_strides[2]}};
  const int64_t n = batch * heads * (past_rows + rows) * features;
  if (n == 0) return cudaSuccess;
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return device::LaunchDependent(RowsKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                                   static_cast<const T*>(past), static_cast<const T*>(x), static_cast<const T*>(bias),
                                   static_cast<T*>(dst), g);
  });
}

cudaError_t MhaBias(const MhaBiasArgs& args, void* bias, cudaStream_t stream) {
  const int64_t n = args.batch * args.heads * args.s * args.total;
  if (n == 0) return cudaSuccess;
  return device::DispatchFloat(args.type, [&](auto tag) {
    using T = decltype(tag);
    return device::LaunchDependent(MhaBiasKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                                   args, static_cast<T*>(bias));
  });
}

}  // namespace tessera::cuda::launch
