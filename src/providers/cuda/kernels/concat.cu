// Concat device kernel: one launch writes the output's axis range covered by up to kMaxConcatInputs inputs.
#include <climits>
#include <cstdint>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

// Every thread copies words of the output's [outer, span, inner_words] block (the axis positions from
// parts.begin[0]) from the input whose axis range holds them. Writes are coalesced over the output's rows,
// reads over each input's rows; the input is found by a scan over at most kMaxConcatInputs bounds.
// Index is int32_t when every offset fits (cheaper divisions), else int64_t.
template <typename Word, typename Index>
__global__ void ConcatKernel(Word* out, Index outer, Index axis_dim, Index inner_words, ConcatParts parts) {
  const Index first = static_cast<Index>(parts.begin[0]);
  const Index block = (static_cast<Index>(parts.begin[parts.count]) - first) * inner_words;
  const Index n = outer * block;
  for (Index i = static_cast<Index>(device::FirstIndex()); i < n; i += static_cast<Index>(device::IndexStride())) {
    const Index o = i / block;
    const Index position = i - o * block;  // within this outer index's block
    const Index a = first + position / inner_words;
    const Index k = position - (a - first) * inner_words;
    int j = 0;
    while (a >= parts.begin[j + 1]) ++j;
    const Index begin = static_cast<Index>(parts.begin[j]);
    const Index length = static_cast<Index>(parts.begin[j + 1]) - begin;
    const Word* in = static_cast<const Word*>(parts.data[j]);
    out[(o * axis_dim + a) * inner_words + k] = in[(o * length + a - begin) * inner_words + k];
  }
}

// The widest word size that divides `row_bytes` and every pointer's address.
int WordSize(int64_t row_bytes, const void* out, const ConcatParts& parts) {
  uintptr_t addresses = reinterpret_cast<uintptr_t>(out);
  for (int j = 0; j < parts.count; ++j) addresses |= reinterpret_cast<uintptr_t>(parts.data[j]);
  for (int size : {16, 8, 4, 2})
    if (row_bytes % size == 0 && addresses % size == 0) return size;
  return 1;
}

template <typename Word>
cudaError_t LaunchConcat(void* out, int64_t outer, int64_t axis_dim, int64_t row_bytes, const ConcatParts& parts,
                         cudaStream_t stream) {
  const int64_t inner_words = row_bytes / static_cast<int64_t>(sizeof(Word));
  const int64_t n = outer * (parts.begin[parts.count] - parts.begin[0]) * inner_words;
  Word* words = static_cast<Word*>(out);
  // The largest offset written is below outer * axis_dim * inner_words (>= n); a grid-stride index may
  // exceed it by one stride.
  const int64_t largest = outer * axis_dim * inner_words + int64_t{device::kThreads} * device::BlocksFor(n);
  if (largest <= INT32_MAX)
    ConcatKernel<Word, int32_t><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
        words, static_cast<int32_t>(outer), static_cast<int32_t>(axis_dim), static_cast<int32_t>(inner_words), parts);
  else
    ConcatKernel<Word, int64_t><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(words, outer, axis_dim,
                                                                                      inner_words, parts);
  return device::LaunchStatus();
}

}  // namespace

cudaError_t Concat(int element_size, void* out, int64_t outer, int64_t axis_dim, int64_t inner,
                   const ConcatParts& parts, cudaStream_t stream) {
  if (parts.count < 1 || parts.count > kMaxConcatInputs || element_size < 1) return cudaErrorInvalidValue;
  const int64_t row_bytes = inner * element_size;
  if (outer == 0 || row_bytes == 0 || parts.begin[parts.count] == parts.begin[0]) return cudaSuccess;
  switch (WordSize(row_bytes, out, parts)) {
    case 16: return LaunchConcat<uint4>(out, outer, axis_dim, row_bytes, parts, stream);
    case 8: return LaunchConcat<uint64_t>(out, outer, axis_dim, row_bytes, parts, stream);
    case 4: return LaunchConcat<uint32_t>(out, outer, axis_dim, row_bytes, parts, stream);
    case 2: return LaunchConcat<uint16_t>(out, outer, axis_dim, row_bytes, parts, stream);
    default: return LaunchConcat<uint8_t>(out, outer, axis_dim, row_bytes, parts, stream);
  }
}

}  // namespace tessera::cuda::launch
