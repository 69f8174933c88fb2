// ConvTranspose's window of the unpadded result (conv_transpose_ops.cc): asymmetric pads crop it, output_padding
// extends it with zeros (the bias is added afterwards).
#include <cstdint>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {
namespace {

struct Window {
  int rank;
  int64_t out[kMaxRank], full[kMaxRank], offset[kMaxRank];
};

template <typename T>
__global__ void CropOrExtendKernel(const T* full, T* y, Window w, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, source = 0, stride = 1;
    bool inside = true;
    for (int d = w.rank - 1; d >= 0; --d) {
      const int64_t c = rest % w.out[d] + w.offset[d];
      rest /= w.out[d];
      inside = inside && c >= 0 && c < w.full[d];
      source += c * stride;
      stride *= w.full[d];
    }
    y[i] = inside ? full[source] : device::FromFloat<T>(0.0f);
  }
}

}  // namespace

cudaError_t CropOrExtend(ElementType type, const void* full, void* y, int rank, const int64_t* out_dims,
                         const int64_t* full_dims, const int64_t* offset, int64_t n, cudaStream_t stream) {
  if (rank < 1 || rank > kMaxRank) return cudaErrorInvalidValue;
  Window w{};
  w.rank = rank;
  for (int d = 0; d < rank; ++d) {
    w.out[d] = out_dims[d];
    w.full[d] = full_dims[d];
    w.offset[d] = offset[d];
  }
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    CropOrExtendKernel<T><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(static_cast<const T*>(full),
                                                                                 static_cast<T*>(y), w, n);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
