// SkipLayerNormalization device kernel: one block per row, float32 accumulation. The row's elements are
// spread over the threads exactly as in LayerNormalization's kernel (normalization.cu), with the same block
// sizes and the same reductions, so that in strict mode the result is the unfused Add + LayerNormalization's
// bit for bit. Rows of up to kCachedRow elements keep their sum in shared memory between the passes.
#include <type_traits>

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

template <typename T, bool kStrict>
void Launch(const Row<T>& row, const SkipLayerNormArgs& args, cudaStream_t stream) {
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
                     args.epsilon};
    // float32 additions are rounded to float32 either way: one instantiation serves both modes.
    if constexpr (std::is_same_v<T, float>) Launch<T, true>(row, args, stream);
    else if (args.strict) Launch<T, true>(row, args, stream);
    else Launch<T, false>(row, args, stream);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
