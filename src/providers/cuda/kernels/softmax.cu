// Softmax / LogSoftmax device kernels over x viewed as [outer, axis, inner].
#include <cfloat>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FromFloat;
using device::kThreads;
using device::ToFloat;

// Reduces `value` over the block with `combine`; every thread gets the result.
template <typename Combine>
__device__ float BlockReduce(float value, Combine combine, float* scratch) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) scratch[threadIdx.x] = combine(scratch[threadIdx.x], scratch[threadIdx.x + width]);
    __syncthreads();
  }
  const float result = scratch[0];
  __syncthreads();
  return result;
}

// inner == 1: one block per contiguous row of length `axis`.
template <typename T>
__global__ void RowSoftmax(const T* x, T* y, int64_t axis, bool log) {
  __shared__ float scratch[kThreads];
  const T* in = x + blockIdx.x * axis;
  T* out = y + blockIdx.x * axis;
  float local_max = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < axis; j += blockDim.x) local_max = fmaxf(local_max, ToFloat(in[j]));
  const float row_max = BlockReduce(local_max, [](float a, float b) { return fmaxf(a, b); }, scratch);
  float local_sum = 0.0f;
  for (int64_t j = threadIdx.x; j < axis; j += blockDim.x) local_sum += __expf(ToFloat(in[j]) - row_max);
  const float sum = BlockReduce(local_sum, [](float a, float b) { return a + b; }, scratch);
  const float log_sum = logf(sum);
  for (int64_t j = threadIdx.x; j < axis; j += blockDim.x) {
    const float shifted = ToFloat(in[j]) - row_max;
    out[j] = FromFloat<T>(log ? shifted - log_sum : __expf(shifted) / sum);
  }
}

// inner > 1: one thread per (outer, inner) column, walking the strided axis.
template <typename T>
__global__ void ColumnSoftmax(const T* x, T* y, int64_t outer, int64_t axis, int64_t inner, bool log) {
  const int64_t columns = outer * inner;
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < columns; c += int64_t{gridDim.x} * blockDim.x) {
    const int64_t base = (c / inner) * axis * inner + c % inner;
    float column_max = -FLT_MAX;
    for (int64_t j = 0; j < axis; ++j) column_max = fmaxf(column_max, ToFloat(x[base + j * inner]));
    float sum = 0.0f;
    for (int64_t j = 0; j < axis; ++j) sum += __expf(ToFloat(x[base + j * inner]) - column_max);
    const float log_sum = logf(sum);
    for (int64_t j = 0; j < axis; ++j) {
      const float shifted = ToFloat(x[base + j * inner]) - column_max;
      y[base + j * inner] = FromFloat<T>(log ? shifted - log_sum : __expf(shifted) / sum);
    }
  }
}

}  // namespace

cudaError_t Softmax(ElementType type, const void* x, void* y, int64_t outer, int64_t axis, int64_t inner, bool log,
                    cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    if (inner == 1)
      RowSoftmax<T><<<static_cast<unsigned>(outer), kThreads, 0, stream>>>(in, out, axis, log);
    else
      ColumnSoftmax<T><<<device::BlocksFor(outer * inner), kThreads, 0, stream>>>(in, out, outer, axis, inner, log);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
