// ScatterElements and ScatterND without reduction: updates written into a tensor that already holds the data.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

template <typename Index>
__device__ __forceinline__ int64_t IndexAt(const void* indices, int64_t i) {
  return static_cast<int64_t>(static_cast<const Index*>(indices)[i]);
}

template <typename W, typename Index>
__global__ void ScatterElementsKernel(W* out, const void* indices, const W* updates, ScatterElementsGeometry g,
                                      int64_t n) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t p = device::FirstIndex(); p < n; p += device::IndexStride()) {
    int64_t index = IndexAt<Index>(indices, p);
    if (index < 0) index += g.axis_dim;
    if (index < 0 || index >= g.axis_dim) continue;
    int64_t offset = 0, rest = p;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t coordinate = rest % g.dims[d];
      rest /= g.dims[d];
      offset += (d == g.axis ? index : coordinate) * g.data_strides[d];
    }
    out[offset] = updates[p];
  }
}

template <typename W, typename Index>
__global__ void ScatterNdKernel(W* out, const void* indices, const W* updates, ScatterNdGeometry g) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const int64_t n = g.tuples * g.slice;
  for (int64_t e = device::FirstIndex(); e < n; e += device::IndexStride()) {
    const int64_t t = e / g.slice;
    int64_t offset = 0;
    bool inside = true;
    for (int d = 0; d < g.tuple_size; ++d) {
      int64_t coordinate = IndexAt<Index>(indices, t * g.tuple_size + d);
      if (coordinate < 0) coordinate += g.data_dims[d];
      inside = inside && coordinate >= 0 && coordinate < g.data_dims[d];
      offset += coordinate * g.data_strides[d];
    }
    if (inside) out[offset + e % g.slice] = updates[e];
  }
}

}  // namespace

cudaError_t ScatterElements(int element_size, void* out, const void* indices, bool indices_are_int64,
                            const void* updates, const ScatterElementsGeometry& geometry, cudaStream_t stream) {
  int64_t n = 1;
  for (int d = 0; d < geometry.rank; ++d) n *= geometry.dims[d];
  if (n == 0) return cudaSuccess;
  return device::DispatchWord(element_size, [&](auto tag) {
    using W = decltype(tag);
    const dim3 grid(device::BlocksFor(n)), block(device::kThreads);
    if (indices_are_int64)
      return device::LaunchDependent(ScatterElementsKernel<W, int64_t>, grid, block, 0, stream, static_cast<W*>(out),
                                     indices, static_cast<const W*>(updates), geometry, n);
    return device::LaunchDependent(ScatterElementsKernel<W, int32_t>, grid, block, 0, stream, static_cast<W*>(out),
                                   indices, static_cast<const W*>(updates), geometry, n);
  });
}

cudaError_t ScatterNd(int element_size, void* out, const void* indices, bool indices_are_int64, const void* updates,
                      const ScatterNdGeometry& geometry, cudaStream_t stream) {
  const int64_t n = geometry.tuples * geometry.slice;
  if (n == 0) return cudaSuccess;
  return device::DispatchWord(element_size, [&](auto tag) {
    using W = decltype(tag);
    const dim3 grid(device::BlocksFor(n)), block(device::kThreads);
    if (indices_are_int64)
      return device::LaunchDependent(ScatterNdKernel<W, int64_t>, grid, block, 0, stream, static_cast<W*>(out), indices,
                                     static_cast<const W*>(updates), geometry);
    return device::LaunchDependent(ScatterNdKernel<W, int32_t>, grid, block, 0, stream, static_cast<W*>(out), indices,
                                   static_cast<const W*>(updates), geometry);
  });
}

}  // namespace tessera::cuda::launch
