// ReduceSum / ReduceMean / ReduceMax / ReduceMin device kernels, accumulating in float.
//
// Rows (the reduced axes last): one warp per row, or one block per row for long rows. Middle axes
// ([outer, length, inner] with inner > 1): one thread per output, reading consecutive inner positions
// across the warp (coalesced). Any other axis set: one thread per output walking the reduced coordinates.
#include <cfloat>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FirstIndex;
using device::FromFloat;
using device::IndexStride;
using device::ToFloat;
using device::kWarp;

constexpr int64_t kBlockRowLength = 4096;  // rows at least this long get a whole block

struct Accumulator {
  ReduceOp op;
  __device__ float Initial() const {
    return op == ReduceOp::kMax ? -INFINITY : op == ReduceOp::kMin ? INFINITY : 0.0f;
  }
  __device__ float Combine(float a, float b) const {
    return op == ReduceOp::kMax ? fmaxf(a, b) : op == ReduceOp::kMin ? fminf(a, b) : a + b;
  }
  __device__ float Finish(float value, int64_t count) const {
    return op == ReduceOp::kMean ? value / static_cast<float>(count) : value;
  }
};

__device__ __forceinline__ float WarpCombine(const Accumulator& acc, float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    value = acc.Combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

template <typename T>
__global__ void WarpRowsKernel(Accumulator acc, const T* x, T* y, int64_t rows, int64_t length) {
  const int64_t warps_per_block = blockDim.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  for (int64_t row = blockIdx.x * warps_per_block + threadIdx.x / kWarp; row < rows;
       row += gridDim.x * warps_per_block) {
    const T* in = x + row * length;
    float value = acc.Initial();
    for (int64_t j = lane; j < length; j += kWarp) value = acc.Combine(value, ToFloat(in[j]));
    value = WarpCombine(acc, value);
    if (lane == 0) y[row] = FromFloat<T>(acc.Finish(value, length));
  }
}

template <typename T>
__global__ void BlockRowsKernel(Accumulator acc, const T* x, T* y, int64_t length) {
  __shared__ float partial[device::kThreads / kWarp];
  const T* in = x + blockIdx.x * length;
  float value = acc.Initial();
  for (int64_t j = threadIdx.x; j < length; j += blockDim.x) value = acc.Combine(value, ToFloat(in[j]));
  value = WarpCombine(acc, value);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = value;
  __syncthreads();
  if (threadIdx.x < kWarp) {
    value = threadIdx.x < blockDim.x / kWarp ? partial[threadIdx.x] : acc.Initial();
    value = WarpCombine(acc, value);
    if (threadIdx.x == 0) y[blockIdx.x] = FromFloat<T>(acc.Finish(value, length));
  }
}

template <typename T>
__global__ void ColumnsKernel(Accumulator acc, const T* x, T* y, int64_t outer, int64_t length, int64_t inner) {
  for (int64_t i = FirstIndex(); i < outer * inner; i += IndexStride()) {
    const T* in = x + (i / inner) * length * inner + i % inner;
    float value = acc.Initial();
    for (int64_t j = 0; j < length; ++j) value = acc.Combine(value, ToFloat(in[j * inner]));
    y[i] = FromFloat<T>(acc.Finish(value, length));
  }
}

template <typename T>
__global__ void GeneralKernel(Accumulator acc, const T* x, T* y, ReduceGeometry g) {
  for (int64_t i = FirstIndex(); i < g.outputs; i += IndexStride()) {
    const int64_t base = device::OperandOffset(i, g.kept_rank, g.kept_dims, g.kept_strides);
    float value = acc.Initial();
    for (int64_t r = 0; r < g.reduced; ++r)
      value = acc.Combine(value, ToFloat(x[base + device::OperandOffset(r, g.reduced_rank, g.reduced_dims,
                                                                          g.reduced_strides)]));
    y[i] = FromFloat<T>(acc.Finish(value, g.reduced));
  }
}

}  // namespace

cudaError_t ReduceMiddle(ReduceOp op, ElementType type, const void* x, void* y, int64_t outer, int64_t length,
                         int64_t inner, cudaStream_t stream) {
  const Accumulator acc{op};
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    if (inner > 1) {
      ColumnsKernel<T><<<device::BlocksFor(outer * inner), device::kThreads, 0, stream>>>(acc, in, out, outer, length,
                                                                                         inner);
    } else if (length >= kBlockRowLength) {
      BlockRowsKernel<T><<<static_cast<unsigned>(outer), device::kThreads, 0, stream>>>(acc, in, out, length);
    } else {
      WarpRowsKernel<T><<<device::BlocksFor(outer * kWarp), device::kThreads, 0, stream>>>(acc, in, out, outer,
                                                                                          length);
    }
    return device::LaunchStatus();
  });
}

cudaError_t ReduceGeneral(ReduceOp op, ElementType type, const void* x, void* y, const ReduceGeometry& geometry,
                          cudaStream_t stream) {
  const Accumulator acc{op};
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    GeneralKernel<T><<<device::BlocksFor(geometry.outputs), device::kThreads, 0, stream>>>(
        acc, static_cast<const T*>(x), static_cast<T*>(y), geometry);
    return device::LaunchStatus();
  });
}

namespace {

// The running winner of an ArgMax / ArgMin: `index` -1 until a value was seen.
struct Candidate {
  float value;
  int64_t index;
};

__device__ __forceinline__ Candidate Better(Candidate a, Candidate b, bool is_max, bool select_last) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  const bool b_wins = is_max ? b.value > a.value : b.value < a.value;
  if (b_wins) return b;
  if (b.value == a.value && (select_last ? b.index > a.index : b.index < a.index)) return b;
  return a;
}

// This thread's share of row[begin, end): the 16-byte-aligned middle in whole words (a vocabulary's 50257 logits:
// a few words per thread instead of dozens of scalar loads), the unaligned ends one element at a time.
template <typename T>
__device__ Candidate ScanRange(const T* row, int64_t begin, int64_t end, Candidate best, bool is_max,
                               bool select_last) {
  constexpr int64_t kPerWord = 16 / sizeof(T);
  const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(row + begin) % 16) / int64_t{sizeof(T)};
  const int64_t length = end - begin;
  const int64_t head = misalign == 0 ? 0 : (kPerWord - misalign < length ? kPerWord - misalign : length);
  const int64_t words = (length - head) / kPerWord;
  const int64_t tail = begin + head + words * kPerWord;
  const uint4* body = reinterpret_cast<const uint4*>(row + begin + head);
#pragma unroll 4
  for (int64_t w = threadIdx.x; w < words; w += blockDim.x) {
    const uint4 word = body[w];
    const T* values = reinterpret_cast<const T*>(&word);
#pragma unroll
    for (int e = 0; e < kPerWord; ++e)
      best = Better(best, Candidate{device::ToFloat(values[e]), begin + head + w * kPerWord + e}, is_max, select_last);
  }
  for (int64_t l = begin + threadIdx.x; l < begin + head; l += blockDim.x)
    best = Better(best, Candidate{device::ToFloat(row[l]), l}, is_max, select_last);
  for (int64_t l = tail + threadIdx.x; l < end; l += blockDim.x)
    best = Better(best, Candidate{device::ToFloat(row[l]), l}, is_max, select_last);
  return best;
}

// The block's winner, in thread 0 (blockDim.x a multiple of 32, at most 1024).
__device__ Candidate BlockWinner(Candidate best, bool is_max, bool select_last) {
  __shared__ Candidate partial[32];
  for (int offset = device::kWarp / 2; offset > 0; offset /= 2) {
    Candidate other{__shfl_xor_sync(0xffffffffu, best.value, offset),
                    static_cast<int64_t>(__shfl_xor_sync(0xffffffffu, static_cast<long long>(best.index), offset))};
    best = Better(best, other, is_max, select_last);
  }
  if (threadIdx.x % device::kWarp == 0) partial[threadIdx.x / device::kWarp] = best;
  __syncthreads();
  Candidate winner = partial[0];
  if (threadIdx.x == 0)
    for (unsigned w = 1; w < blockDim.x / device::kWarp; ++w) winner = Better(winner, partial[w], is_max, select_last);
  return winner;
}

// One block per row (inner == 1).
template <typename T>
__global__ void ArgRowsKernel(const T* x, int64_t* y, int64_t length, bool is_max, bool select_last) {
  const T* row = x + blockIdx.x * length;
  const Candidate winner = BlockWinner(ScanRange(row, 0, length, Candidate{0.0f, -1}, is_max, select_last), is_max,
                                       select_last);
  if (threadIdx.x == 0) y[blockIdx.x] = winner.index;
}

// Long rows: gridDim.y blocks per row each find their slice's winner (parts[row][slice]), then ArgPartsKernel picks
// among them. A single block over 50257 float16 logits took 11.8 us (ncu, H100), most of it waiting for its loads.
template <typename T>
__global__ void ArgSlicesKernel(const T* x, Candidate* parts, int64_t length, int64_t slice, bool is_max,
                                bool select_last) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const T* row = x + blockIdx.x * length;
  const int64_t begin = blockIdx.y * slice, end = begin + slice < length ? begin + slice : length;
  const Candidate winner = BlockWinner(ScanRange(row, begin, end, Candidate{0.0f, -1}, is_max, select_last), is_max,
                                       select_last);
  if (threadIdx.x == 0) parts[blockIdx.x * gridDim.y + blockIdx.y] = winner;
}

__global__ void ArgPartsKernel(const Candidate* parts, int64_t* y, int slices, bool is_max, bool select_last) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  Candidate best{0.0f, -1};
  for (int i = threadIdx.x; i < slices; i += blockDim.x)
    best = Better(best, parts[blockIdx.x * slices + i], is_max, select_last);
  const Candidate winner = BlockWinner(best, is_max, select_last);
  if (threadIdx.x == 0) y[blockIdx.x] = winner.index;
}

// One thread per (outer, inner) column.
template <typename T>
__global__ void ArgColumnsKernel(const T* x, int64_t* y, int64_t outer, int64_t length, int64_t inner, bool is_max,
                                 bool select_last) {
  for (int64_t i = device::FirstIndex(); i < outer * inner; i += device::IndexStride()) {
    const T* column = x + (i / inner) * length * inner + i % inner;
    Candidate best{0.0f, -1};
    for (int64_t l = 0; l < length; ++l)
      best = Better(best, Candidate{device::ToFloat(column[l * inner]), l}, is_max, select_last);
    y[i] = best.index;
  }
}

}  // namespace

size_t ArgReduceWorkspace(int64_t outer, int64_t length, int64_t inner) {
  if (inner != 1 || length < kArgSlicedLength) return 0;
  return static_cast<size_t>(outer) * kArgSlices * sizeof(Candidate);
}

cudaError_t ArgReduce(bool is_max, ElementType type, const void* x, int64_t* y, int64_t outer, int64_t length,
                      int64_t inner, bool select_last, void* workspace, cudaStream_t stream) {
  if (outer * inner == 0) return cudaSuccess;
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    if (inner == 1 && length >= kArgSlicedLength && workspace != nullptr && outer <= 65535) {
      auto* parts = static_cast<Candidate*>(workspace);
      const int64_t slice = (length + kArgSlices - 1) / kArgSlices;
      cudaError_t status = device::LaunchDependent(ArgSlicesKernel<T>, dim3(static_cast<unsigned>(outer), kArgSlices),
                                                   dim3(256), 0, stream, in, parts, length, slice, is_max, select_last);
      if (status != cudaSuccess) return status;
      return device::LaunchDependent(ArgPartsKernel, dim3(static_cast<unsigned>(outer)), dim3(device::kWarp), 0, stream,
                                     static_cast<const Candidate*>(parts), y, static_cast<int>(kArgSlices), is_max,
                                     select_last);
    } else if (inner == 1 && length >= 256) {
      const int threads = length >= 8192 ? 1024 : 256;
      ArgRowsKernel<T><<<static_cast<unsigned>(outer), threads, 0, stream>>>(in, y, length, is_max, select_last);
    } else {
      ArgColumnsKernel<T><<<device::BlocksFor(outer * inner), device::kThreads, 0, stream>>>(in, y, outer, length,
                                                                                              inner, is_max, select_last);
    }
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
