// FusedMatMul's epilogue in one pass over the product: bias per column, activation, then the addend.
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

// The same over 16-byte words (columns a multiple of a word, operands 16-byte aligned, the addend of Y's shape or
// absent): one bias offset per word instead of one 64-bit remainder per element. BERT-base's FFN at 128 tokens
// (128 x 3072, bias + GELU in float16) is the case this serves.
template <typename T>
__global__ void MatMulEpilogueWordKernel(T* y, int64_t words, int64_t row_words, const T* bias,
                                         EpilogueActivation activation, const T* addend) {
  constexpr int kWord = device::kWordElements<T>;
  for (int64_t w = device::FirstIndex(); w < words; w += device::IndexStride()) {
    float v[kWord];
    device::UnpackWord(reinterpret_cast<const uint4*>(y)[w], v, T{});
    if (bias != nullptr) {
      float b[kWord];
      device::UnpackWord(__ldg(reinterpret_cast<const uint4*>(bias) + w % row_words), b, T{});
#pragma unroll
      for (int i = 0; i < kWord; ++i) v[i] += b[i];
    }
#pragma unroll
    for (int i = 0; i < kWord; ++i) v[i] = device::Activate(activation, v[i]);
    if (addend != nullptr) {
      float a[kWord];
      device::UnpackWord(reinterpret_cast<const uint4*>(addend)[w], a, T{});
#pragma unroll
      for (int i = 0; i < kWord; ++i) v[i] += a[i];
    }
    reinterpret_cast<uint4*>(y)[w] = device::PackWord(v, T{});
  }
}

bool WordAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t MatMulEpilogue(ElementType type, void* y, int64_t n, int64_t columns, const void* bias,
                           const EpilogueActivation& activation, const void* addend, const BroadcastIndex* addend_index,
                           cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    constexpr int kWord = device::kWordElements<T>;
    if (addend_index == nullptr && columns > 0 && columns % kWord == 0 && n % columns == 0 && WordAligned(y) &&
        WordAligned(bias) && WordAligned(addend)) {
      const int64_t words = n / kWord;
      MatMulEpilogueWordKernel<T><<<device::BlocksFor(words), device::kThreads, 0, stream>>>(
          static_cast<T*>(y), words, columns / kWord, static_cast<const T*>(bias), activation,
          static_cast<const T*>(addend));
      return device::LaunchStatus();
    }
    MatMulEpilogueKernel<T><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
        static_cast<T*>(y), n, columns, static_cast<const T*>(bias), activation, static_cast<const T*>(addend),
        addend_index != nullptr ? *addend_index : BroadcastIndex{}, addend_index != nullptr);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
