// RotaryEmbedding (launch.h): one thread per rotated pair or passed-through feature of every (batch, token, head).
#include "providers/cuda/kernels/device_common.cuh"
#include "providers/cuda/kernels/launch.h"

namespace tessera::cuda::launch {

namespace {

template <typename T>
__global__ void RotaryKernel(RotaryArgs a) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const T* x = static_cast<const T*>(a.x);
  const T* cos = static_cast<const T*>(a.cos);
  const T* sin = static_cast<const T*>(a.sin);
  T* y = static_cast<T*>(a.y);
  const int64_t half = a.rot / 2;
  const int64_t per_head = half + (a.head_size - a.rot);  // pairs, then the features that pass through
  const int64_t n = a.batch * a.seq * a.heads * per_head;
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t w = i % per_head;
    const int64_t h = (i / per_head) % a.heads;
    const int64_t s = (i / (per_head * a.heads)) % a.seq;
    const int64_t b = i / (per_head * a.heads * a.seq);
    const int64_t offset = b * a.batch_stride + h * a.head_stride + s * a.token_stride;
    if (w >= half) {
      const int64_t f = a.rot + (w - half);
      y[offset + f] = x[offset + f];
      continue;
    }
    int64_t row = b * a.seq + s;
    if (a.positions != nullptr) {
      const int64_t at = a.first_only ? 0 : b * a.seq + s;
      const int64_t p = a.int64_positions ? static_cast<const int64_t*>(a.positions)[at]
                                          : static_cast<const int32_t*>(a.positions)[at];
      row = a.first_only ? p + s : p;
      row = row < 0 ? 0 : (row >= a.max_position ? a.max_position - 1 : row);
    }
    const int64_t i1 = a.interleaved ? 2 * w : w, i2 = a.interleaved ? 2 * w + 1 : w + half;
    const float c = device::ToFloat(cos[row * half + w]), sn = device::ToFloat(sin[row * half + w]);
    const float x1 = device::ToFloat(x[offset + i1]), x2 = device::ToFloat(x[offset + i2]);
    y[offset + i1] = device::FromFloat<T>(c * x1 - sn * x2);
    y[offset + i2] = device::FromFloat<T>(sn * x1 + c * x2);
  }
}

}  // namespace

cudaError_t RotaryEmbedding(const RotaryArgs& args, cudaStream_t stream) {
  if (args.rot <= 0 || args.rot % 2 != 0 || args.rot > args.head_size) return cudaErrorInvalidValue;
  if (args.positions != nullptr && args.max_position <= 0) return cudaErrorInvalidValue;
  const int64_t n = args.batch * args.seq * args.heads * (args.head_size - args.rot / 2);
  if (n == 0) return cudaSuccess;
  return device::DispatchFloat(args.type, [&](auto tag) {
    using T = decltype(tag);
    return device::LaunchDependent(RotaryKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                                   args);
  });
}

}  // namespace tessera::cuda::launch
