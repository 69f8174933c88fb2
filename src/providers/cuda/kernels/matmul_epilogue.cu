// FusedMatMul's epilogue in one pass over the product: bias per column, activation, then the addend. Rows of an even
// length take the pair kernel (pair_epilogue.cuh); the general kernel below broadcasts the addend.
#include "providers/cuda/kernels/device_common.cuh"
#include "providers/cuda/kernels/pair_epilogue.cuh"

namespace tessera::cuda::launch {
namespace {

using device::FromFloat;
using device::ToFloat;

template <typename T>
__global__ void MatMulEpilogueKernel(T* y, int64_t n, int64_t columns, const T* bias, EpilogueActivation activation,
                                     const T* addend, BroadcastIndex index, bool broadcast_addend) {
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    float v = ToFloat(y[i]);
    if (bias != nullptr) v += ToFloat(bias[i % columns]);
    v = device::Activate(activation, v);
    if (addend != nullptr) {
      int64_t offset = i;
      if (broadcast_addend) {
        int64_t rest = i;
        offset = 0;
        for (int d = index.rank - 1; d >= 0; --d) {
          offset += (rest % index.out_dims[d]) * index.b_strides[d];
          rest /= index.out_dims[d];
        }
      }
      v += ToFloat(addend[offset]);
    }
    y[i] = FromFloat<T>(v);
  }
}

}  // namespace

cudaError_t MatMulEpilogue(ElementType type, void* y, int64_t n, int64_t columns, const void* bias,
                           const EpilogueActivation& activation, const void* addend, const BroadcastIndex* addend_index,
                           cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (addend_index == nullptr && device::PairEpilogueFits<T>(y, n, columns, bias, addend))
      return device::PairEpilogue<T, false>(static_cast<T*>(y), n, columns, static_cast<const T*>(bias), activation,
                                            static_cast<const T*>(addend), stream);
    MatMulEpilogueKernel<T><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
        static_cast<T*>(y), n, columns, static_cast<const T*>(bias), activation, static_cast<const T*>(addend),
        addend_index != nullptr ? *addend_index : BroadcastIndex{}, addend_index != nullptr);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
