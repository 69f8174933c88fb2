// Elementwise device kernels: broadcasting binary arithmetic, activations, Clip, broadcast copies.
//
// One set of kernel templates serves every element type: values are loaded into a compute type (float for
// float and half, the integer itself for int32 and int64), combined by an operation functor, and stored
// back. Which operations take integers is a table (kTakesIntegers); the rest are float-only.
#include <type_traits>

#include "providers/cuda/kernels/device_common.cuh"

namespace tessera::cuda::launch {

namespace {

using device::kThreads;

template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, __half>, float, T>;

template <typename T>
__device__ __forceinline__ ComputeType<T> Load(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else return v;
}
template <typename T>
__device__ __forceinline__ T Store(ComputeType<T> v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return v;
}

// Integer arithmetic wraps (two's complement) instead of being undefined on overflow: it happens in the
// unsigned type of the same width (std::make_unsigned). Floats compute as they are.
template <typename C>
using Wrap = typename std::conditional_t<std::is_integral_v<C>, std::make_unsigned<C>, std::enable_if<true, C>>::type;

struct AddF {
  template <typename C>
  __device__ C operator()(C a, C b) const { return static_cast<C>(Wrap<C>(a) + Wrap<C>(b)); }
};
struct SubF {
  template <typename C>
  __device__ C operator()(C a, C b) const { return static_cast<C>(Wrap<C>(a) - Wrap<C>(b)); }
};
struct MulF {
  template <typename C>
  __device__ C operator()(C a, C b) const { return static_cast<C>(Wrap<C>(a) * Wrap<C>(b)); }
};
// Integers: truncation toward zero (C++ division), INT_MIN / -1 wraps, x / 0 = 0 (see launch.h).
struct DivF {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      if (b == C(-1)) return static_cast<C>(Wrap<C>(0) - Wrap<C>(a));
    }
    return a / b;
  }
};
struct PowF {
  __device__ float operator()(float a, float b) const { return powf(a, b); }
};

template <typename T, typename Op>
__global__ void SameShapeBinary(const T* a, const T* b, T* out, int64_t n) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  Op op;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = Store<T>(op(Load(a[i]), Load(b[i])));
}

template <typename T, typename Op>
__global__ void BroadcastBinary(const T* a, const T* b, T* out, int64_t n, BroadcastIndex index) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  Op op;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, a_offset = 0, b_offset = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      const int64_t coordinate = rest % index.out_dims[d];
      rest /= index.out_dims[d];
      a_offset += coordinate * index.a_strides[d];
      b_offset += coordinate * index.b_strides[d];
    }
    out[i] = Store<T>(op(Load(a[a_offset]), Load(b[b_offset])));
  }
}

template <typename T, typename Op>
__global__ void RowBinary(const T* a, const T* row, T* out, int64_t n, int64_t row_length, bool row_first) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  Op op;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const ComputeType<T> x = Load(a[i]), r = Load(row[i % row_length]);
    out[i] = Store<T>(row_first ? op(r, x) : op(x, r));
  }
}

struct ReluF {
  __device__ float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
};
struct SigmoidF {
  __device__ float operator()(float x) const { return 1.0f / (1.0f + __expf(-x)); }
};
struct TanhF {
  __device__ float operator()(float x) const { return tanhf(x); }
};
struct ErfF {
  __device__ float operator()(float x) const { return erff(x); }
};
struct SqrtF {
  __device__ float operator()(float x) const { return sqrtf(x); }
};
struct NegF {
  template <typename C>
  __device__ C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(Wrap<C>(0) - Wrap<C>(x));
    else return -x;
  }
};
struct ExpF {
  __device__ float operator()(float x) const { return expf(x); }
};
struct LogF {
  __device__ float operator()(float x) const { return logf(x); }
};
struct AbsF {
  template <typename C>
  __device__ C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return x < C(0) ? NegF{}(x) : x;
    else return fabsf(x);
  }
};
struct ReciprocalF {
  __device__ float operator()(float x) const { return 1.0f / x; }
};
struct FloorF {
  __device__ float operator()(float x) const { return floorf(x); }
};
struct CeilF {
  __device__ float operator()(float x) const { return ceilf(x); }
};
// Gelu, exact: x * Phi(x) with the normal CDF through erf.
struct GeluF {
  __device__ float operator()(float x) const { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
};
// Gelu, tanh approximation (approximate = "tanh").
struct GeluTanhF {
  __device__ float operator()(float x) const {
    const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
};
struct IdentityF {
  __device__ float operator()(float x) const { return x; }
};
struct SquareF {
  __device__ float operator()(float x) const { return x * x; }
};
struct PowScalarF {
  float exponent;
  __device__ float operator()(float x) const { return powf(x, exponent); }
};
struct ClipF {
  float lo, hi;
  __device__ float operator()(float x) const { return fminf(fmaxf(x, lo), hi); }
};

// A parameterized activation (HardSigmoid, HardSwish, LeakyRelu), as the fused epilogues compute it.
struct ActivateF {
  EpilogueActivation activation;
  __device__ float operator()(float x) const { return device::Activate(activation, x); }
};

// The operations that also take int32 and int64; the others are float-only.
template <typename Op>
inline constexpr bool kTakesIntegers =
    std::is_same_v<Op, AddF> || std::is_same_v<Op, SubF> || std::is_same_v<Op, MulF> || std::is_same_v<Op, DivF> ||
    std::is_same_v<Op, NegF> || std::is_same_v<Op, AbsF>;

// Calls fn(T{}) with the element type T of `type` when Op is defined on it; cudaErrorInvalidValue otherwise.
template <typename Op, typename Fn>
cudaError_t DispatchArithmetic(ScalarType type, Fn&& fn) {
  switch (type) {
    case ScalarType::kFloat: return fn(float{});
    case ScalarType::kHalf: return fn(__half{});
    case ScalarType::kInt32:
      if constexpr (kTakesIntegers<Op>) return fn(int32_t{});
      break;
    case ScalarType::kInt64:
      if constexpr (kTakesIntegers<Op>) return fn(int64_t{});
      break;
    default: break;
  }
  return cudaErrorInvalidValue;
}

ScalarType AsScalarType(ElementType type) {
  return type == ElementType::kHalf ? ScalarType::kHalf : ScalarType::kFloat;
}

template <typename Op>
cudaError_t LaunchRowBinary(ScalarType type, const void* a, const void* row, void* out, int64_t n, int64_t row_length,
                            bool row_first, cudaStream_t stream) {
  return DispatchArithmetic<Op>(type, [&](auto tag) {
    using T = decltype(tag);
    device::LaunchDependent(RowBinary<T, Op>, dim3(device::BlocksFor(n)), dim3(kThreads), 0, stream,
                            static_cast<const T*>(a), static_cast<const T*>(row), static_cast<T*>(out), n, row_length,
                            row_first);
    return device::LaunchStatus();
  });
}

template <typename Op>
cudaError_t LaunchBinary(ScalarType type, const void* a, const void* b, void* out, int64_t n,
                         const BroadcastIndex* index, cudaStream_t stream) {
  return DispatchArithmetic<Op>(type, [&](auto tag) {
    using T = decltype(tag);
    const T* ta = static_cast<const T*>(a);
    const T* tb = static_cast<const T*>(b);
    T* tout = static_cast<T*>(out);
    if (index == nullptr)
      device::LaunchDependent(SameShapeBinary<T, Op>, dim3(device::BlocksFor(n)), dim3(kThreads), 0, stream, ta, tb,
                              tout, n);
    else
      device::LaunchDependent(BroadcastBinary<T, Op>, dim3(device::BlocksFor(n)), dim3(kThreads), 0, stream, ta, tb,
                              tout, n, *index);
    return device::LaunchStatus();
  });
}

template <typename T, typename Op>
__global__ void UnaryKernel(const T* x, T* y, int64_t n, Op op) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = Store<T>(op(Load(x[i])));
}

template <typename Op>
cudaError_t LaunchUnary(ScalarType type, const void* x, void* y, int64_t n, Op op, cudaStream_t stream) {
  return DispatchArithmetic<Op>(type, [&](auto tag) {
    using T = decltype(tag);
    device::LaunchDependent(UnaryKernel<T, Op>, dim3(device::BlocksFor(n)), dim3(kThreads), 0, stream,
                            static_cast<const T*>(x), static_cast<T*>(y), n, op);
    return device::LaunchStatus();
  });
}

template <typename T>
__global__ void BroadcastCopy(const T* a, T* out, int64_t n, BroadcastIndex index) {
  device::WaitForPrerequisites();
  device::AllowDependents();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, offset = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      offset += (rest % index.out_dims[d]) * index.a_strides[d];
      rest /= index.out_dims[d];
    }
    out[i] = a[offset];
  }
}

}  // namespace

cudaError_t Binary(BinaryOp op, ScalarType type, const void* a, const void* b, void* out, int64_t n,
                   const BroadcastIndex* index, cudaStream_t stream) {
  switch (op) {
    case BinaryOp::kAdd: return LaunchBinary<AddF>(type, a, b, out, n, index, stream);
    case BinaryOp::kSub: return LaunchBinary<SubF>(type, a, b, out, n, index, stream);
    case BinaryOp::kMul: return LaunchBinary<MulF>(type, a, b, out, n, index, stream);
    case BinaryOp::kDiv: return LaunchBinary<DivF>(type, a, b, out, n, index, stream);
    case BinaryOp::kPow: return LaunchBinary<PowF>(type, a, b, out, n, index, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t BinaryRow(BinaryOp op, ScalarType type, const void* a, const void* row, void* out, int64_t n,
                      int64_t row_length, bool row_first, cudaStream_t stream) {
  switch (op) {
    case BinaryOp::kAdd: return LaunchRowBinary<AddF>(type, a, row, out, n, row_length, row_first, stream);
    case BinaryOp::kSub: return LaunchRowBinary<SubF>(type, a, row, out, n, row_length, row_first, stream);
    case BinaryOp::kMul: return LaunchRowBinary<MulF>(type, a, row, out, n, row_length, row_first, stream);
    case BinaryOp::kDiv: return LaunchRowBinary<DivF>(type, a, row, out, n, row_length, row_first, stream);
    case BinaryOp::kPow: return LaunchRowBinary<PowF>(type, a, row, out, n, row_length, row_first, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t Unary(UnaryOp op, ScalarType type, const void* x, void* y, int64_t n, cudaStream_t stream) {
  switch (op) {
    case UnaryOp::kRelu: return LaunchUnary(type, x, y, n, ReluF{}, stream);
    case UnaryOp::kSigmoid: return LaunchUnary(type, x, y, n, SigmoidF{}, stream);
    case UnaryOp::kTanh: return LaunchUnary(type, x, y, n, TanhF{}, stream);
    case UnaryOp::kErf: return LaunchUnary(type, x, y, n, ErfF{}, stream);
    case UnaryOp::kSqrt: return LaunchUnary(type, x, y, n, SqrtF{}, stream);
    case UnaryOp::kNeg: return LaunchUnary(type, x, y, n, NegF{}, stream);
    case UnaryOp::kExp: return LaunchUnary(type, x, y, n, ExpF{}, stream);
    case UnaryOp::kLog: return LaunchUnary(type, x, y, n, LogF{}, stream);
    case UnaryOp::kAbs: return LaunchUnary(type, x, y, n, AbsF{}, stream);
    case UnaryOp::kReciprocal: return LaunchUnary(type, x, y, n, ReciprocalF{}, stream);
    case UnaryOp::kGelu: return LaunchUnary(type, x, y, n, GeluF{}, stream);
    case UnaryOp::kGeluTanh: return LaunchUnary(type, x, y, n, GeluTanhF{}, stream);
    case UnaryOp::kFloor: return LaunchUnary(type, x, y, n, FloorF{}, stream);
    case UnaryOp::kCeil: return LaunchUnary(type, x, y, n, CeilF{}, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t Binary(BinaryOp op, ElementType type, const void* a, const void* b, void* out, int64_t n,
                   const BroadcastIndex* index, cudaStream_t stream) {
  return Binary(op, AsScalarType(type), a, b, out, n, index, stream);
}

cudaError_t BinaryRow(BinaryOp op, ElementType type, const void* a, const void* row, void* out, int64_t n,
                      int64_t row_length, bool row_first, cudaStream_t stream) {
  return BinaryRow(op, AsScalarType(type), a, row, out, n, row_length, row_first, stream);
}

cudaError_t Unary(UnaryOp op, ElementType type, const void* x, void* y, int64_t n, cudaStream_t stream) {
  return Unary(op, AsScalarType(type), x, y, n, stream);
}

cudaError_t PowScalar(ElementType type, const void* x, void* y, int64_t n, float exponent, cudaStream_t stream) {
  const ScalarType scalar = AsScalarType(type);
  if (exponent == 2.0f) return LaunchUnary(scalar, x, y, n, SquareF{}, stream);
  if (exponent == 0.5f) return LaunchUnary(scalar, x, y, n, SqrtF{}, stream);
  if (exponent == 1.0f) return LaunchUnary(scalar, x, y, n, IdentityF{}, stream);
  return LaunchUnary(scalar, x, y, n, PowScalarF{exponent}, stream);
}

cudaError_t Clip(ElementType type, const void* x, void* y, int64_t n, float lo, float hi, cudaStream_t stream) {
  return LaunchUnary(AsScalarType(type), x, y, n, ClipF{lo, hi}, stream);
}

cudaError_t Activation(ElementType type, const void* x, void* y, int64_t n, const EpilogueActivation& activation,
                       cudaStream_t stream) {
  return LaunchUnary(AsScalarType(type), x, y, n, ActivateF{activation}, stream);
}

cudaError_t BroadcastTo(ElementType type, const void* a, void* out, int64_t n, const BroadcastIndex& index,
                        cudaStream_t stream) {
  return device::DispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    device::LaunchDependent(BroadcastCopy<T>, dim3(device::BlocksFor(n)), dim3(kThreads), 0, stream,
                            static_cast<const T*>(a), static_cast<T*>(out), n, index);
    return device::LaunchStatus();
  });
}

}  // namespace tessera::cuda::launch
