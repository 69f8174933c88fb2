// Cast between float, float16, double, integer and bool element types.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, __half>;

// To's value of `v`: half goes through float; bool is v != 0; floats to integers truncate.
template <typename To, typename From>
__device__ __forceinline__ To Convert(From v) {
  if constexpr (kIsHalf<From>) {
    return Convert<To>(__half2float(v));
  } else if constexpr (kIsHalf<To>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* y, int64_t n) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = device::FirstIndex(); i < n; i += device::IndexStride()) y[i] = Convert<To>(x[i]);
}

}  // namespace

cudaError_t Cast(ScalarType from, ScalarType to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  return device::DispatchScalar(from, [&](auto from_tag) {
    using From = decltype(from_tag);
    return device::DispatchScalar(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      device::LaunchDependent(CastKernel<From, To>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                              static_cast<const From*>(x), static_cast<To*>(y), n);
      return device::LaunchStatus();
    });
  });
}

}  // namespace tessera::cuda::launch
