// Gather along one axis and constant fills, for any element size.
#include <cstring>
#include <type_traits>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

// Indices read from device memory, or carried by value in the launch (InlineIndices).
template <typename Index>
struct DeviceIndices {
  const Index* values;
  __device__ int64_t operator[](int64_t j) const { return static_cast<int64_t>(values[j]); }
};
struct ValueIndices {
  InlineIndices inline_indices;
  __device__ int64_t operator[](int64_t j) const { return inline_indices.values[j]; }
};

template <typename W, typename Indices>
__global__ void GatherKernel(const W* data, Indices indices, W* out, int64_t outer, int64_t axis_dim, int64_t inner,
                             int64_t index_count) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t n = outer * index_count * inner;
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) {
    const int64_t in_row = i % inner;
    const int64_t j = (i / inner) % index_count;
    const int64_t o = i / (inner * index_count);
    int64_t index = indices[j];
    if (index < 0) index += axis_dim;
    index = index < 0 ? 0 : (index >= axis_dim ? axis_dim - 1 : index);
    out[i] = data[(o * axis_dim + index) * inner + in_row];
  }
}

template <typename W>
__global__ void FillKernel(W* out, int64_t n, W value) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) out[i] = value;
}

template <typename T>
__global__ void RangeKernel(T* out, int64_t n, T start, T delta) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride())
    out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
}

}  // namespace

cudaError_t Gather(int element_size, const void* data, const void* indices, bool indices_are_int64, void* out,
                   int64_t outer, int64_t axis_dim, int64_t inner, int64_t index_count, cudaStream_t stream) {
  const int64_t n = outer * index_count * inner;
  return device::DispatchWord(element_size, [&](auto tag) {
    using W = decltype(tag);
    const W* in = static_cast<const W*>(data);
    W* result = static_cast<W*>(out);
    if (indices_are_int64)
      device::LaunchDependent(
          GatherKernel<W, DeviceIndices<int64_t>>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream, in,
          DeviceIndices<int64_t>{static_cast<const int64_t*>(indices)}, result, outer, axis_dim, inner, index_count);
    else
      device::LaunchDependent(
          GatherKernel<W, DeviceIndices<int32_t>>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream, in,
          DeviceIndices<int32_t>{static_cast<const int32_t*>(indices)}, result, outer, axis_dim, inner, index_count);
    return device::LaunchStatus();
  });
}

cudaError_t GatherInline(int element_size, const void* data, const InlineIndices& indices, void* out, int64_t outer,
                         int64_t axis_dim, int64_t inner, int64_t index_count, cudaStream_t stream) {
  if (index_count > kInlineIndices) return cudaErrorInvalidValue;
  const int64_t n = outer * index_count * inner;
  return device::DispatchWord(element_size, [&](auto tag) {
    using W = decltype(tag);
    device::LaunchDependent(GatherKernel<W, ValueIndices>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0,
                            stream, static_cast<const W*>(data), ValueIndices{indices}, static_cast<W*>(out), outer,
                            axis_dim, inner, index_count);
    return device::LaunchStatus();
  });
}

cudaError_t Fill(int element_size, void* out, int64_t n, const void* value, cudaStream_t stream) {
  return device::DispatchWord(element_size, [&](auto tag) {
    using W = decltype(tag);
    W word;
    std::memcpy(&word, value, sizeof(W));
    device::LaunchDependent(FillKernel<W>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                            static_cast<W*>(out), n, word);
    return device::LaunchStatus();
  });
}

cudaError_t Range(ScalarType type, void* out, int64_t n, const void* start, const void* delta, cudaStream_t stream) {
  return device::DispatchScalar(type, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int16_t> ||
                  std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      T first, step;
      std::memcpy(&first, start, sizeof(T));
      std::memcpy(&step, delta, sizeof(T));
      device::LaunchDependent(RangeKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                              static_cast<T*>(out), n, first, step);
      return device::LaunchStatus();
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace tessera::cuda::launch
