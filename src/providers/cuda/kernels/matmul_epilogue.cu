// FusedMatMul's epilogue in one pass over the product: bias per column, activation, then the addend.
#include <cstdint>

#include "providers/cuda/kernels/device_common.cuh"

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

// The same over 16-byte words (8 float16 or 4 float32 elements): rows of whole words, aligned operands, the addend
// (if any) of the product's shape. One bias word per output word, and one modulo per word instead of per element.
template <typename T>
__global__ void MatMulEpilogueWordsKernel(uint4* y, int64_t words, int64_t row_words, const uint4* bias,
                                          EpilogueActivation activation, const uint4* addend) {
  constexpr int kPer = device::kWordElements<T>;
  for (int64_t w = device::FirstIndex(); w < words; w += device::IndexStride()) {
    float v[kPer], b[kPer];
    device::UnpackWord(y[w], v, T{});
    if (bias != nullptr) {
      device::UnpackWord(bias[w % row_words], b, T{});
#pragma unroll
      for (int e = 0; e < kPer; ++e) v[e] += b[e];
    }
#pragma unroll
    for (int e = 0; e < kPer; ++e) v[e] = device::Activate(activation, v[e]);
    if (addend != nullptr) {
      device::UnpackWord(addend[w], b, T{});
#pragma unroll
      for (int e = 0; e < kPer; ++e) v[e] += b[e];
    }
    y[w] = device::PackWord(v, T{});
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t MatMulEpilogue(ElementType type, void* y, int64_t n, int64_t columns, const void* bias,
                           const EpilogueActivation& activation, const void* addend, const BroadcastIndex* addend_index,
                           cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    constexpr int64_t kPer = device::kWordElements<T>;
    if (columns % kPer == 0 && addend_index == nullptr && Aligned16(y) && (bias == nullptr || Aligned16(bias)) &&
        (addend == nullptr || Aligned16(addend))) {
      const int64_t words = n / kPer;
      MatMulEpilogueWordsKernel<T><<<device::BlocksFor(words), device::kThreads, 0, stream>>>(
          static_cast<uint4*>(y), words, columns / kPer, static_cast<const uint4*>(bias), activation,
          static_cast<const uint4*>(addend));
      return device::LaunchStatus();
    }
    MatMulEpilogueKernel<T><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
        static_cast<T*>(y), n, columns, static_cast<const T*>(bias), activation, static_cast<const T*>(addend),
        addend_index != nullptr ? *addend_index : BroadcastIndex{}, addend_index != nullptr);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
