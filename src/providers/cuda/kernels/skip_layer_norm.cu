// SkipLayerNormalization device kernels, float32 accumulation. Strict mode (and rows the warp kernel does not take):
// one block per row, the row's elements spread over the threads exactly as in LayerNormalization's kernel
// (normalization.cu), with the same block sizes and the same reductions, so that in strict mode the result is the
// unfused Add + LayerNormalization's bit for bit; rows of up to kCachedRow elements keep their sum in shared memory
// between the passes. Default mode: one warp per row of at most 1024 elements (SkipLayerNormWarpKernel).
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

// Default arithmetic, rows of at most 1024 elements: one warp per row, the row held in registers, 16-byte loads and
// stores, warp shuffles for the statistics -- no shared memory, no block barriers. The block-per-row kernel's three
// barrier-separated passes cost ~5.4 us per row of 768 on the H100 for a decoding step's token (ncu), and ~7.8 us for
// BERT-base's 128 rows of 768. A 16-byte word holds 8 float16 or 4 float32 elements; kWords words per lane cover
// 1024 elements either way.
template <typename T>
struct WarpRow {
  static constexpr int kPerWord = device::kWordElements<T>;
  static constexpr int kWords = 1024 / (kWarp * kPerWord);
};

template <typename T>
__global__ void SkipLayerNormWarpKernel(Row<T> p, int64_t rows) {
  constexpr int kPerWord = WarpRow<T>::kPerWord;
  constexpr int kWords = WarpRow<T>::kWords;
  const int64_t row = blockIdx.x * int64_t{blockDim.x / kWarp} + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  const int words = static_cast<int>(p.hidden / kPerWord);
  const uint4* gamma = reinterpret_cast<const uint4*>(p.gamma);
  const uint4* beta = reinterpret_cast<const uint4*>(p.beta);
  const uint4* bias = reinterpret_cast<const uint4*>(p.bias);
  // The per-feature parameters as loaded; constants are loaded before waiting, so that their memory latency (they
  // are rarely in L2 in a decoding step, whose weights stream through it) overlaps the kernel before.
  uint4 gamma_words[kWords], beta_words[kWords], bias_words[kWords];
  const auto load_parameters = [&] {
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
      const int at = lane + w * kWarp;
      if (at < words) {
        gamma_words[w] = gamma[at];
        if (beta != nullptr) beta_words[w] = beta[at];
        if (bias != nullptr) bias_words[w] = bias[at];
      }
    }
  };
  if (p.constant_parameters && row < rows) load_parameters();
  device::WaitForPrerequisites();
  device::AllowDependents();
  if (row >= rows) return;
  if (!p.constant_parameters) load_parameters();
  const uint4* a = reinterpret_cast<const uint4*>(p.input + row * p.hidden);
  const uint4* b = reinterpret_cast<const uint4*>(p.skip + row * p.hidden);
  float v[kWords][kPerWord], g[kWords][kPerWord], s[kWords][kPerWord];
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    const int at = lane + w * kWarp;
    if (at >= words) break;
    float x[kPerWord], y[kPerWord], z[kPerWord];
    device::UnpackWord(a[at], x, T{});
    device::UnpackWord(b[at], y, T{});
    device::UnpackWord(gamma_words[w], g[w], T{});
    if (beta != nullptr) device::UnpackWord(beta_words[w], s[w], T{});
    if (bias != nullptr) device::UnpackWord(bias_words[w], z, T{});
#pragma unroll
    for (int e = 0; e < kPerWord; ++e) {
      v[w][e] = x[e] + (bias != nullptr ? z[e] : 0.0f) + y[e];
      total += v[w][e];
      if (beta == nullptr) s[w][e] = 0.0f;
    }
    if (p.sum != nullptr) reinterpret_cast<uint4*>(p.sum + row * p.hidden)[at] = device::PackWord(v[w], T{});
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
  const float mean = total / static_cast<float>(p.hidden);
  float squares = 0.0f;
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    if (lane + w * kWarp >= words) break;
#pragma unroll
    for (int e = 0; e < kPerWord; ++e) squares += (v[w][e] - mean) * (v[w][e] - mean);
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  const float inv_std = rsqrtf(squares / static_cast<float>(p.hidden) + p.epsilon);
  uint4* out = reinterpret_cast<uint4*>(p.output + row * p.hidden);
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    const int at = lane + w * kWarp;
    if (at >= words) break;
    float y[kPerWord];
#pragma unroll
    for (int e = 0; e < kPerWord; ++e) y[e] = (v[w][e] - mean) * inv_std * g[w][e] + s[w][e];
    out[at] = device::PackWord(y, T{});
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Whether the warp-per-row kernel takes these rows (default arithmetic, no broadcasting, whole aligned 16-byte
// words of at most 1024 elements).
template <typename T>
bool WarpRowsFit(const Row<T>& r, const SkipLayerNormArgs& args) {
  // A broadcast over rows is trivial for one row whose operands both run along the hidden axis (a token embedding
  // plus a position embedding of one [hidden] row).
  const bool plain = args.index == nullptr || (args.rows == 1 && args.index->rank > 0 &&
                                               args.index->a_strides[args.index->rank - 1] == 1 &&
                                               args.index->b_strides[args.index->rank - 1] == 1);
  constexpr int64_t kPerWord = WarpRow<T>::kPerWord;
  return !args.strict && plain && args.hidden % kPerWord == 0 &&
         args.hidden <= int64_t{kWarp} * WarpRow<T>::kWords * kPerWord && Aligned16(r.input) && Aligned16(r.skip) &&
         Aligned16(r.gamma) && Aligned16(r.output) && (r.beta == nullptr || Aligned16(r.beta)) &&
         (r.bias == nullptr || Aligned16(r.bias)) && (r.sum == nullptr || Aligned16(r.sum));
}

// Warps (rows) per block of the warp-per-row kernel: up to 4 for a few rows (a decoding step); one for up to 1024
// rows, which spreads them over every SM (BERT-base's 128 rows: 128 blocks); four beyond.
int64_t WarpRowsPerBlock(int64_t rows) {
  if (rows <= 16) return rows < 4 ? rows : 4;
  return rows <= 1024 ? 1 : 4;
}

template <typename T, bool kStrict>
void Launch(const Row<T>& row, const SkipLayerNormArgs& args, cudaStream_t stream) {
  if constexpr (!kStrict) {
    if (WarpRowsFit(row, args)) {
      const int64_t per_block = WarpRowsPerBlock(args.rows);
      device::LaunchDependent(SkipLayerNormWarpKernel<T>,
                              dim3(static_cast<unsigned>((args.rows + per_block - 1) / per_block)),
                              dim3(static_cast<unsigned>(per_block * kWarp)), 0, stream, row, args.rows);
      return;
    }
  }
  // LayerNormalization's block sizes (normalization.cu): the same reduction order.
  const unsigned threads = args.hidden <= 256 ? 64 : args.hidden <= 1024 ? 128 : 256;
  const bool cached = args.hidden <= kCachedRow;
  const size_t shared = cached ? static_cast<size_t>(args.hidden) * sizeof(float) : 0;
  const BroadcastIndex index = args.index != nullptr ? *args.index : BroadcastIndex{};
  SkipLayerNormKernel<T, kStrict><<<static_cast<unsigned>(args.rows), threads, shared, stream>>>(
      row, index, args.index != nullptr, cached);
}

}  // namespace

cudaError_t SkipLayerNorm(const SkipLayerNormArgs& args, cudaStream_t stream) {
  return device::DispatchFloat(args.type, [&](auto tag) {
    using T = decltype(tag);
    const Row<T> row{static_cast<const T*>(args.input), static_cast<const T*>(args.skip),
                     static_cast<const T*>(args.gamma), static_cast<const T*>(args.beta),
                     static_cast<const T*>(args.bias),  static_cast<T*>(args.output),
                     static_cast<T*>(args.sum),         args.hidden,
                     args.epsilon,                      args.constant_parameters && device::EarlyConstantLoads()};
    // float32 additions are rounded to float32 in both modes, so the block kernel's results are the same; strict
    // mode keeps its reduction order (the unfused graph's), default mode may take the warp-per-row kernel.
    if (args.strict) Launch<T, true>(row, args, stream);
    else Launch<T, false>(row, args, stream);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
