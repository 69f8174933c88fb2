// SkipLayerNormalization device kernels, float32 accumulation. Strict mode (and rows the word kernel does not take):
// one block per row, the row's elements spread over the threads exactly as in LayerNormalization's kernel
// (normalization.cu), with the same block sizes and the same reductions, so that in strict mode the result is the
// unfused Add + LayerNormalization's bit for bit; rows of up to kCachedRow elements keep their sum in shared memory
// between the passes. Default mode: one thread per 16-byte word of a row (SkipLayerNormWordKernel).
#include <algorithm>
#include <cstdint>

#include "providers/cuda/kernels/device_common.cuh"
#include "providers/cuda/kernels/skip_layer_norm.h"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::BlockSum;
using device::ToFloat;
using device::kWarp;

constexpr int64_t kCachedRow = 8192;  // 32 KiB of shared memory; longer rows recompute the sum per pass

template <typename T>
struct Row {
  const T* input;
  const T* skip;
  const T* gamma;
  const T* beta;
  const T* bias;
  T* output;
  T* sum;
  int64_t hidden;
  float epsilon;
  bool constant_parameters;  // gamma, beta and bias may be read before WaitForPrerequisites
  const float* partials;     // instead of input (word kernel only): partial_count float32 arrays
  int partial_count;
  int64_t partial_stride;
};

// An addition's result as the unfused Add stores it (strict) or as computed (default).
template <typename T, bool kStrict>
__device__ __forceinline__ float Settle(float v) {
  if constexpr (kStrict) return ToFloat(FromFloat<T>(v));
  else return v;
}

// Where a row starts in input and skip, and the element step along it (0 when that operand's last dim is 1).
struct RowStart {
  int64_t input, skip, input_step, skip_step;
};

__device__ RowStart StartOf(int64_t row, int64_t hidden, const BroadcastIndex& index, bool broadcast) {
  if (!broadcast) return {row * hidden, row * hidden, 1, 1};
  const int64_t first = row * hidden;
  const int last = index.rank - 1;
  return {device::OperandOffset(first, index.rank, index.out_dims, index.a_strides),
          device::OperandOffset(first, index.rank, index.out_dims, index.b_strides), index.a_strides[last],
          index.b_strides[last]};
}

template <typename T, bool kStrict>
__global__ void SkipLayerNormKernel(Row<T> p, BroadcastIndex index, bool broadcast, bool cached) {
  extern __shared__ float row_sum[];
  __shared__ float partial[kWarp];
  const int64_t row = blockIdx.x, hidden = p.hidden;
  const RowStart at = StartOf(row, hidden, index, broadcast);
  const T* a = p.input + at.input;
  const T* b = p.skip + at.skip;
  T* sum_out = p.sum != nullptr ? p.sum + row * hidden : nullptr;
  T* out = p.output + row * hidden;
  const auto sum_at = [&](int64_t j) {
    float x = ToFloat(a[j * at.input_step]);
    if (p.bias != nullptr) x = Settle<T, kStrict>(x + ToFloat(p.bias[j]));
    return Settle<T, kStrict>(x + ToFloat(b[j * at.skip_step]));
  };
  // Each thread reads back only the elements it cached itself: no barrier needed between the passes.
  const auto value_at = [&](int64_t j) { return cached ? row_sum[j] : sum_at(j); };
  float total = 0.0f;
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
    const float v = sum_at(j);
    if (cached) row_sum[j] = v;
    if (sum_out != nullptr) sum_out[j] = FromFloat<T>(v);
    total += v;
  }
  const float mean = BlockSum(total, partial) / static_cast<float>(hidden);
  float squares = 0.0f;
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
    const float d = value_at(j) - mean;
    squares += d * d;
  }
  const float inv_std = rsqrtf(BlockSum(squares, partial) / static_cast<float>(hidden) + p.epsilon);
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
    const float shift = p.beta != nullptr ? ToFloat(p.beta[j]) : 0.0f;
    out[j] = FromFloat<T>((value_at(j) - mean) * inv_std * ToFloat(p.gamma[j]) + shift);
  }
}

// Default arithmetic, rows of at most 1024 16-byte words (8192 float16 or 4096 float32 elements): one thread per
// word, the row in registers, shuffle reductions within each warp and one shared-memory step across the warps of a
// row; several rows per block when a row is short. A row is spread over as many threads as it has words because the
// kernel is bound by each thread's chain of dependent instructions, not by memory (its operands are in L2): one warp
// per BERT-base row (three words per lane) measured 2.6 us in the graph, 1.6% occupancy and 0.11 instructions per
// cycle per SM (ncu); a thread per word 2.2 us. The block-per-row kernel above, with barrier-separated passes over
// global memory, cost ~5.4 us for a decoding step's row of 768 and ~7.8 us for BERT-base's 128 rows on the H100.
template <typename T>
__global__ void SkipLayerNormWordKernel(Row<T> p, int64_t rows) {
  constexpr int kPerWord = device::kWordElements<T>;
  __shared__ float sum_parts[kWarp], square_parts[kWarp];  // one per warp of the block (at most 1024 threads)
  const int64_t row = blockIdx.x * int64_t{blockDim.y} + threadIdx.y;
  const int word = static_cast<int>(threadIdx.x);
  const int words = static_cast<int>(p.hidden / kPerWord);
  const int row_warps = static_cast<int>(blockDim.x) / kWarp;
  const int first_part = static_cast<int>(threadIdx.y) * row_warps;
  const int part = first_part + word / kWarp;
  const bool active = row < rows && word < words;
  const uint4* gamma = reinterpret_cast<const uint4*>(p.gamma);
  const uint4* beta = reinterpret_cast<const uint4*>(p.beta);
  const uint4* bias = reinterpret_cast<const uint4*>(p.bias);
  // The per-feature parameters as loaded; constants are loaded before waiting, so that their memory latency (they
  // are rarely in L2 in a decoding step, whose weights stream through it) overlaps the kernel before.
  uint4 gamma_word{}, beta_word{}, bias_word{};
  const auto load_parameters = [&] {
    if (!active) return;
    gamma_word = gamma[word];
    if (beta != nullptr) beta_word = beta[word];
    if (bias != nullptr) bias_word = bias[word];
  };
  if (p.constant_parameters) load_parameters();
  device::WaitForPrerequisites();
  device::AllowDependents();
  if (!p.constant_parameters) load_parameters();
  float v[kPerWord] = {};
  float total = 0.0f;
  if (active) {
    float x[kPerWord] = {}, y[kPerWord], z[kPerWord] = {};
    if (p.partials != nullptr) {
      // The word's elements of each float32 partial sum, 16 bytes at a time, added in order.
      const float* at = p.partials + row * p.hidden + int64_t{word} * kPerWord;
      for (int s = 0; s < p.partial_count; ++s, at += p.partial_stride) {
#pragma unroll
        for (int q = 0; q < kPerWord; q += 4) {
          const float4 f = *reinterpret_cast<const float4*>(at + q);
          x[q] += f.x;
          x[q + 1] += f.y;
          x[q + 2] += f.z;
          x[q + 3] += f.w;
        }
      }
    } else {
      device::UnpackWord(reinterpret_cast<const uint4*>(p.input + row * p.hidden)[word], x, T{});
    }
    device::UnpackWord(reinterpret_cast<const uint4*>(p.skip + row * p.hidden)[word], y, T{});
    if (bias != nullptr) device::UnpackWord(bias_word, z, T{});
#pragma unroll
    for (int e = 0; e < kPerWord; ++e) {
      v[e] = x[e] + z[e] + y[e];
      total += v[e];
    }
    if (p.sum != nullptr) reinterpret_cast<uint4*>(p.sum + row * p.hidden)[word] = device::PackWord(v, T{});
  }
  // The row's sum: each warp's by shuffles, then the row's warps' in order.
  for (int offset = kWarp / 2; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
  if (word % kWarp == 0) sum_parts[part] = total;
  __syncthreads();
  float row_total = 0.0f;
  for (int w = 0; w < row_warps; ++w) row_total += sum_parts[first_part + w];
  const float mean = row_total / static_cast<float>(p.hidden);
  float squares = 0.0f;
  if (active) {
#pragma unroll
    for (int e = 0; e < kPerWord; ++e) squares += (v[e] - mean) * (v[e] - mean);
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  if (word % kWarp == 0) square_parts[part] = squares;
  __syncthreads();
  float row_squares = 0.0f;
  for (int w = 0; w < row_warps; ++w) row_squares += square_parts[first_part + w];
  if (!active) return;
  const float inv_std = rsqrtf(row_squares / static_cast<float>(p.hidden) + p.epsilon);
  float g[kPerWord], s[kPerWord] = {}, out[kPerWord];
  device::UnpackWord(gamma_word, g, T{});
  if (beta != nullptr) device::UnpackWord(beta_word, s, T{});
#pragma unroll
  for (int e = 0; e < kPerWord; ++e) out[e] = (v[e] - mean) * inv_std * g[e] + s[e];
  reinterpret_cast<uint4*>(p.output + row * p.hidden)[word] = device::PackWord(out, T{});
}

constexpr int64_t kMaxRowWords = 1024;  // one thread per word, one block per row at most

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Whether the word-per-thread kernel takes these rows (default arithmetic, no broadcasting, whole aligned 16-byte
// words, at most kMaxRowWords of them).
template <typename T>
bool WordRowsFit(const Row<T>& r, const SkipLayerNormArgs& args) {
  // A broadcast over rows is trivial for one row whose operands both run along the hidden axis (a token embedding
  // plus a position embedding of one [hidden] row).
  const bool plain = args.index == nullptr || (args.rows == 1 && args.index->rank > 0 &&
                                               args.index->a_strides[args.index->rank - 1] == 1 &&
                                               args.index->b_strides[args.index->rank - 1] == 1);
  constexpr int64_t kPerWord = device::kWordElements<T>;
  return !args.strict && plain && args.hidden % kPerWord == 0 && args.hidden <= kMaxRowWords * kPerWord &&
         Aligned16(r.partials != nullptr ? static_cast<const void*>(r.partials) : r.input) &&
         (r.partials == nullptr || r.partial_stride % 4 == 0) && Aligned16(r.skip) &&
         Aligned16(r.gamma) && Aligned16(r.output) && (r.beta == nullptr || Aligned16(r.beta)) &&
         (r.bias == nullptr || Aligned16(r.bias)) && (r.sum == nullptr || Aligned16(r.sum));
}

template <typename T, bool kStrict>
void Launch(const Row<T>& row, const SkipLayerNormArgs& args, cudaStream_t stream) {
  if constexpr (!kStrict) {
    if (WordRowsFit(row, args)) {
      // Threads per row: the row's words rounded up to whole warps; rows per block: as many as fit in 128 threads.
      const int64_t words = args.hidden / device::kWordElements<T>;
      const int64_t row_threads = (words + kWarp - 1) / kWarp * kWarp;
      const int64_t per_block = std::max<int64_t>(1, std::min<int64_t>(args.rows, 128 / row_threads));
      device::LaunchDependent(SkipLayerNormWordKernel<T>,
                              dim3(static_cast<unsigned>((args.rows + per_block - 1) / per_block)),
                              dim3(static_cast<unsigned>(row_threads), static_cast<unsigned>(per_block)), 0, stream,
                              row, args.rows);
      return;
    }
  }
  if (row.partials != nullptr) return;  // SkipLayerNorm refused them (SkipLayerNormTakesPartials)
  // LayerNormalization's block sizes (normalization.cu): the same reduction order.
  const unsigned threads = args.hidden <= 256 ? 64 : args.hidden <= 1024 ? 128 : 256;
  const bool cached = args.hidden <= kCachedRow;
  const size_t shared = cached ? static_cast<size_t>(args.hidden) * sizeof(float) : 0;
  const BroadcastIndex index = args.index != nullptr ? *args.index : BroadcastIndex{};
  SkipLayerNormKernel<T, kStrict><<<static_cast<unsigned>(args.rows), threads, shared, stream>>>(
      row, index, args.index != nullptr, cached);
}

template <typename T>
Row<T> RowOf(const SkipLayerNormArgs& args) {
  return Row<T>{static_cast<const T*>(args.input), static_cast<const T*>(args.skip),
                static_cast<const T*>(args.gamma), static_cast<const T*>(args.beta),
                static_cast<const T*>(args.bias),  static_cast<T*>(args.output),
                static_cast<T*>(args.sum),         args.hidden,
                args.epsilon,                      args.constant_parameters && device::EarlyConstantLoads(),
                args.partials,                     args.partial_count,
                args.partial_stride};
}

}  // namespace

bool SkipLayerNormTakesPartials(const SkipLayerNormArgs& args) {
  if (args.partials == nullptr || args.partial_count < 1) return false;
  if (args.type == ElementType::kHalf) return WordRowsFit(RowOf<__half>(args), args);
  return args.type == ElementType::kFloat && WordRowsFit(RowOf<float>(args), args);
}

cudaError_t SkipLayerNorm(const SkipLayerNormArgs& args, cudaStream_t stream) {
  if (args.partials != nullptr && !SkipLayerNormTakesPartials(args)) return cudaErrorInvalidValue;
  return device::DispatchFloat(args.type, [&](auto tag) {
    using T = decltype(tag);
    const Row<T> row = RowOf<T>(args);
    // float32 additions are rounded to float32 in both modes, so the block kernel's results are the same; strict
    // mode keeps its reduction order (the unfused graph's), default mode may take the warp-per-row kernel.
    if (args.strict) Launch<T, true>(row, args, stream);
    else Launch<T, false>(row, args, stream);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
