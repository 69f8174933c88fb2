// Split and Concat device kernels: one launch moves the data of up to 32 parts of a tensor along one axis, from
// the whole into the parts (Split) or from the parts into the whole (Concat).
#include <climits>
#include <cstdint>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

static_assert(kMaxSplitOutputs == kMaxConcatInputs, "one kernel serves both");
constexpr int kMaxParts = kMaxSplitOutputs;

// Part j holds the axis positions [begin[j], begin[j + 1]) of the whole.
struct Parts {
  int count = 0;
  void* data[kMaxParts] = {};
  int64_t begin[kMaxParts + 1] = {};
};

// Every thread moves words of the whole's [outer, span, inner_words] block (the axis positions from begin[0])
// between the whole and the part whose axis range holds them: the whole's rows are walked in order (coalesced),
// each part's rows too; the part is found by a scan over at most kMaxParts bounds. kToParts: whole -> parts
// (Split), else parts -> whole (Concat). Index is int32_t when every offset fits (cheaper divisions).
template <typename Word, typename Index, bool kToParts>
__global__ void AxisPartsKernel(Word* whole, Index outer, Index axis_dim, Index inner_words, Parts parts) {
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
    Word* part = static_cast<Word*>(parts.data[j]);
    Word& whole_word = whole[(o * axis_dim + a) * inner_words + k];
    Word& part_word = part[(o * length + a - begin) * inner_words + k];
    if constexpr (kToParts)
      part_word = whole_word;
    else
      whole_word = part_word;
  }
}

// The widest word size that divides `row_bytes` and every pointer's address.
int WordSize(int64_t row_bytes, const void* whole, const Parts& parts) {
  uintptr_t addresses = reinterpret_cast<uintptr_t>(whole);
  for (int j = 0; j < parts.count; ++j) addresses |= reinterpret_cast<uintptr_t>(parts.data[j]);
  for (int size : {16, 8, 4, 2})
    if (row_bytes % size == 0 && addresses % size == 0) return size;
  return 1;
}

template <typename Word, bool kToParts>
cudaError_t LaunchAxisParts(void* whole, int64_t outer, int64_t axis_dim, int64_t row_bytes, const Parts& parts,
                            cudaStream_t stream) {
  const int64_t inner_words = row_bytes / static_cast<int64_t>(sizeof(Word));
  const int64_t n = outer * (parts.begin[parts.count] - parts.begin[0]) * inner_words;
  Word* words = static_cast<Word*>(whole);
  // The largest offset into the whole is below outer * axis_dim * inner_words (>= n); a grid-stride index may
  // exceed it by one stride.
  const int64_t largest = outer * axis_dim * inner_words + int64_t{device::kThreads} * device::BlocksFor(n);
  if (largest <= INT32_MAX)
    AxisPartsKernel<Word, int32_t, kToParts><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
        words, static_cast<int32_t>(outer), static_cast<int32_t>(axis_dim), static_cast<int32_t>(inner_words), parts);
  else
    AxisPartsKernel<Word, int64_t, kToParts><<<device::BlocksFor(n), device::kThreads, 0, stream>>>(
        words, outer, axis_dim, inner_words, parts);
  return device::LaunchStatus();
}

template <bool kToParts>
cudaError_t MoveAxisParts(int element_size, void* whole, int64_t outer, int64_t axis_dim, int64_t inner,
                          const Parts& parts, cudaStream_t stream) {
  if (parts.count < 1 || parts.count > kMaxParts || element_size < 1) return cudaErrorInvalidValue;
  const int64_t row_bytes = inner * element_size;
  if (outer == 0 || row_bytes == 0 || parts.begin[parts.count] == parts.begin[0]) return cudaSuccess;
  switch (WordSize(row_bytes, whole, parts)) {
    case 16: return LaunchAxisParts<uint4, kToParts>(whole, outer, axis_dim, row_bytes, parts, stream);
    case 8: return LaunchAxisParts<uint64_t, kToParts>(whole, outer, axis_dim, row_bytes, parts, stream);
    case 4: return LaunchAxisParts<uint32_t, kToParts>(whole, outer, axis_dim, row_bytes, parts, stream);
    case 2: return LaunchAxisParts<uint16_t, kToParts>(whole, outer, axis_dim, row_bytes, parts, stream);
    default: return LaunchAxisParts<uint8_t, kToParts>(whole, outer, axis_dim, row_bytes, parts, stream);
  }
}

template <typename Given>
Parts ToParts(const Given& given) {
  Parts parts;
  parts.count = given.count;
  for (int j = 0; j < kMaxParts; ++j) parts.data[j] = const_cast<void*>(static_cast<const void*>(given.data[j]));
  for (int j = 0; j <= kMaxParts; ++j) parts.begin[j] = given.begin[j];
  return parts;
}

}  // namespace

cudaError_t Split(int element_size, const void* in, int64_t outer, int64_t axis_dim, int64_t inner,
                  const SplitParts& parts, cudaStream_t stream) {
  // The whole is only read when moving to the parts.
  return MoveAxisParts<true>(element_size, const_cast<void*>(in), outer, axis_dim, inner, ToParts(parts), stream);
}

cudaError_t Concat(int element_size, void* out, int64_t outer, int64_t axis_dim, int64_t inner,
                   const ConcatParts& parts, cudaStream_t stream) {
  // The parts are only read when moving to the whole.
  return MoveAxisParts<false>(element_size, out, outer, axis_dim, inner, ToParts(parts), stream);
}

}  // namespace tessera::cuda::launch
