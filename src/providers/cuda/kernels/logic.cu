// Comparisons (bool results, any numeric type), logical operators, IsNaN / IsInf and Where, with numpy
// broadcasting.
#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::FirstIndex;
using device::IndexStride;
using device::OperandOffset;

// Comparable value of an element: half compares as float, everything else as itself.
template <typename T>
__device__ __forceinline__ T Comparable(T v) { return v; }
__device__ __forceinline__ float Comparable(__half v) { return __half2float(v); }

template <typename T>
__global__ void CompareKernel(CompareOp op, const T* a, const T* b, bool* out, int64_t n, BroadcastIndex index,
                              bool broadcast) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = FirstIndex(); i < n; i += IndexStride()) {
    const int64_t ia = broadcast ? OperandOffset(i, index.rank, index.out_dims, index.a_strides) : i;
    const int64_t ib = broadcast ? OperandOffset(i, index.rank, index.out_dims, index.b_strides) : i;
    const auto x = Comparable(a[ia]);
    const auto y = Comparable(b[ib]);
    bool r = false;
    switch (op) {
      case CompareOp::kEqual: r = x == y; break;
      case CompareOp::kLess: r = x < y; break;
      case CompareOp::kLessOrEqual: r = x <= y; break;
      case CompareOp::kGreater: r = x > y; break;
      case CompareOp::kGreaterOrEqual: r = x >= y; break;
    }
    out[i] = r;
  }
}

__global__ void LogicalKernel(LogicalOp op, const bool* a, const bool* b, bool* out, int64_t n, BroadcastIndex index,
                              bool broadcast) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = FirstIndex(); i < n; i += IndexStride()) {
    const bool x = a[broadcast ? OperandOffset(i, index.rank, index.out_dims, index.a_strides) : i];
    const bool y = b[broadcast ? OperandOffset(i, index.rank, index.out_dims, index.b_strides) : i];
    out[i] = op == LogicalOp::kAnd ? (x && y) : op == LogicalOp::kOr ? (x || y) : (x != y);
  }
}

__global__ void NotKernel(const bool* x, bool* y, int64_t n) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = FirstIndex(); i < n; i += IndexStride()) y[i] = !x[i];
}

template <typename T>
__global__ void ClassifyKernel(const T* x, bool* y, int64_t n, bool nan, bool positive, bool negative) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = FirstIndex(); i < n; i += IndexStride()) {
    const float v = device::ToFloat(x[i]);
    y[i] = nan ? isnan(v) : ((positive && v == INFINITY) || (negative && v == -INFINITY));
  }
}

template <typename W>
__global__ void WhereKernel(const bool* condition, const W* x, const W* y, W* out, int64_t n, WhereIndex index) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  const BroadcastIndex& v = index.values;
  for (int64_t i = FirstIndex(); i < n; i += IndexStride()) {
    const bool c = condition[OperandOffset(i, v.rank, v.out_dims, index.condition_strides)];
    out[i] = c ? x[OperandOffset(i, v.rank, v.out_dims, v.a_strides)]
               : y[OperandOffset(i, v.rank, v.out_dims, v.b_strides)];
  }
}

}  // namespace

cudaError_t Compare(CompareOp op, ScalarType type, const void* a, const void* b, bool* out, int64_t n,
                    const BroadcastIndex* index, cudaStream_t stream) {
  const BroadcastIndex none{};
  return device::DispatchScalar(type, [&](auto tag) {
    using T = decltype(tag);
    device::LaunchDependent(CompareKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream, op,
                            static_cast<const T*>(a), static_cast<const T*>(b), out, n, index ? *index : none,
                            index != nullptr);
    return device::LaunchStatus();
  });
}

cudaError_t Logical(LogicalOp op, const bool* a, const bool* b, bool* out, int64_t n, const BroadcastIndex* index,
                    cudaStream_t stream) {
  const BroadcastIndex none{};
  device::LaunchDependent(LogicalKernel, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream, op, a, b, out,
                          n, index ? *index : none, index != nullptr);
  return device::LaunchStatus();
}

cudaError_t Not(const bool* x, bool* y, int64_t n, cudaStream_t stream) {
  device::LaunchDependent(NotKernel, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream, x, y, n);
  return device::LaunchStatus();
}

cudaError_t ClassifyFloats(ElementType type, const void* x, bool* y, int64_t n, bool nan, bool positive, bool negative,
                           cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    device::LaunchDependent(ClassifyKernel<T>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream,
                            static_cast<const T*>(x), y, n, nan, positive, negative);
    return device::LaunchStatus();
  });
}

cudaError_t Where(int element_size, const bool* condition, const void* x, const void* y, void* out, int64_t n,
                  const WhereIndex& index, cudaStream_t stream) {
  return device::DispatchWord(element_size, [&](auto tag) {
    using W = decltype(tag);
    device::LaunchDependent(WhereKernel<W>, dim3(device::BlocksFor(n)), dim3(device::kThreads), 0, stream, condition,
                            static_cast<const W*>(x), static_cast<const W*>(y), static_cast<W*>(out), n, index);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
