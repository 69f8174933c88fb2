// Elementwise math, comparison and logical operators with numpy broadcasting.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <type_traits>

#include "providers/cpu/common/broadcast.h"
#include "providers/cpu/common/elementwise_kernel.h"
#include "providers/cpu/common/vector_math.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

using ComparableTypes = AllNumericTypes;
using EqualityTypes = TypeList<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,
                               Float16, BFloat16, bool, std::string>;
using UnsignedTypes = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;
using AnyTypes = TypeList<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, bool,
                          Float16, BFloat16, std::string>;

// Integer arithmetic wraps (two's complement) instead of being undefined on overflow: it happens in the
// unsigned type of the promoted operands (types narrower than int promote to int, which could overflow).
template <typename C>
struct WrapTypeOf {
  using type = C;
};
template <typename C>
  requires std::is_integral_v<C>
struct WrapTypeOf<C> {
  using type = std::make_unsigned_t<std::common_type_t<C, int>>;
};
template <typename C>
using WrapType = typename WrapTypeOf<C>::type;

// ---- binary operations (on compute types) ----------------------------------------------------------

struct AddOp {
  template <typename C>
  C operator()(C a, C b) const { return static_cast<C>(static_cast<WrapType<C>>(a) + static_cast<WrapType<C>>(b)); }
};
struct SubOp {
  template <typename C>
  C operator()(C a, C b) const { return static_cast<C>(static_cast<WrapType<C>>(a) - static_cast<WrapType<C>>(b)); }
};
struct MulOp {
  template <typename C>
  C operator()(C a, C b) const { return static_cast<C>(static_cast<WrapType<C>>(a) * static_cast<WrapType<C>>(b)); }
};

// Integer division and modulus trap on a zero divisor: reject it with an error naming the node.
template <typename T>
void CheckNoZeroDivisor(const Node& node, const Tensor& divisor) {
  if constexpr (std::is_integral_v<T>) {
    const auto values = divisor.Span<T>();
    if (std::find(values.begin(), values.end(), T(0)) != values.end())
      Fail(ErrorCode::kRuntime, node.Describe(), ": integer division by zero");
  }
}

struct DivOp {
  template <typename T>
  void Validate(const Node& node, const Tensor& divisor) const { CheckNoZeroDivisor<T>(node, divisor); }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
      return b == C(-1) ? static_cast<C>(WrapType<C>(0) - static_cast<WrapType<C>>(a)) : a / b;  // no INT_MIN / -1 trap
    } else {
      return a / b;
    }
  }
};

// fmod = 0: the remainder takes the divisor's sign (a - floor(a / b) * b; for floating point from opset 28, which
// defines it: a zero result carries b's sign, b = +-inf gives a for a of b's sign and b otherwise); fmod = 1: the
// dividend's (C fmod).
class ModOp {
 public:
  explicit ModOp(const Node& node) : fmod_(node.GetInt("fmod", 0) != 0), float_floor_(node.opset >= 28) {}
  template <typename T>
  void Validate(const Node& node, const Tensor& divisor) const {
    if (!fmod_ && !std::is_integral_v<T> && !float_floor_)
      Fail(ErrorCode::kInvalidModel, node.Describe(),
           ": floating-point Mod requires attribute fmod = 1 before opset 28");
    CheckNoZeroDivisor<T>(node, divisor);
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (!std::is_integral_v<C>) {
      const C r = std::fmod(a, b);
      if (fmod_ || std::isnan(r)) return r;
      if (r == C(0)) return std::copysign(C(0), b);
      return (r < 0) != (b < 0) ? static_cast<C>(r + b) : r;
    } else if constexpr (std::is_unsigned_v<C>) {
      return a % b;
    } else {
      const C r = b == C(-1) ? C(0) : static_cast<C>(a % b);
      return (!fmod_ && r != 0 && ((r < 0) != (b < 0))) ? static_cast<C>(r + b) : r;
    }
  }

 private:
  bool fmod_;
  bool float_floor_;
};

// Max and Min propagate NaN like numpy.maximum / numpy.minimum.
struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) return (a > b || std::isnan(a)) ? a : b;
    return a > b ? a : b;
  }
};
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) return (a < b || std::isnan(a)) ? a : b;
    return a < b ? a : b;
  }
};

// Shifts by at least the bit width (or, signed, by a negative amount) give what the sign extension alone gives: 0,
// or -1 for a right shift of a negative value (in C++ they are undefined). Signed types (opset 28): right shifts are
// arithmetic, left shifts drop the bits shifted past the sign bit.
class BitShiftOp {
 public:
  explicit BitShiftOp(const Node& node) : left_(IsLeft(node)) {}
  template <typename C>
  C operator()(C a, C b) const {
    const bool out_of_range = [&] {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) return true;
      }
      return static_cast<uint64_t>(b) >= sizeof(C) * 8;
    }();
    if (out_of_range) {
      if constexpr (std::is_signed_v<C>) {
        if (!left_ && a < 0) return C(-1);
      }
      return C(0);
    }
    if (left_) return static_cast<C>(static_cast<WrapType<C>>(a) << b);
    return static_cast<C>(a >> b);
  }

 private:
  static bool IsLeft(const Node& node) {
    const std::string direction = node.GetString("direction");
    if (direction != "LEFT" && direction != "RIGHT") {
      Fail(ErrorCode::kInvalidModel, node.Describe(), ": attribute direction must be 'LEFT' or 'RIGHT', not '",
           direction, "'");
    }
    return direction == "LEFT";
  }

  bool left_;
};

struct EqualOp {
  template <typename C>
  bool operator()(C a, C b) const { return a == b; }
};
struct LessOp {
  template <typename C>
  bool operator()(C a, C b) const { return a < b; }
};
struct GreaterOp {
  template <typename C>
  bool operator()(C a, C b) const { return a > b; }
};
struct LessOrEqualOp {
  template <typename C>
  bool operator()(C a, C b) const { return a <= b; }
};
struct GreaterOrEqualOp {
  template <typename C>
  bool operator()(C a, C b) const { return a >= b; }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};

template <typename Op, typename T>
concept HasValidate = requires(const Op& op, const Node& node, const Tensor& t) { op.template Validate<T>(node, t); };

void CheckSameType(const Node& node, const Tensor& a, const Tensor& b, size_t b_index) {
  if (a.type() != b.type()) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", b_index, " has type ", DataTypeName(b.type()),
         " but input 0 has type ", DataTypeName(a.type()));
  }
}

// The shape input B takes part in broadcasting with: its own, or before opset 7 (where Add, Pow, Equal,
// ... broadcast only through attributes `broadcast` and `axis`) its legacy alignment with A.
Shape OperandShape(const Node& node, const Shape& a, const Shape& b) {
  return node.opset < 7 ? LegacyBroadcastOperandShape(node, a, b) : b;
}

// Runs the op's operand check when it has one (in its own template so that clang does not look the
// member up for ops without it).
template <typename T, typename Op>
void ValidateOperand(const Op& op, const Node& node, const Tensor& b) {
  if constexpr (HasValidate<Op, T>) op.template Validate<T>(node, b);
}

// C = op(A, B) with broadcasting; C has A's type, or bool for comparisons.
template <typename Op, typename Types>
class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(const KernelInfo& info) : op_(MakeOp<Op>(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    CheckSameType(ctx.node(), a, b, 1);
    const Shape b_shape = OperandShape(ctx.node(), a.shape(), b.shape());
    const Shape out_shape = BroadcastShapes(ctx.node(), a.shape(), b_shape);
    DispatchType(a.type(), Types{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ValidateOperand<T>(op_, ctx.node(), b);
      const auto op = LiftBinary<T>(op_);
      using R = std::invoke_result_t<decltype(op), T, T>;
      Tensor& c = ctx.Output(0, DataTypeOf<R>(), out_shape);
      BinaryBroadcast(ctx.thread_pool(), a.Data<T>(), a.shape(), b.Data<T>(), b_shape, c.Data<R>(), out_shape, op);
    });
  }

 private:
  Op op_;
};

// ---- Pow: base type T, exponent type T1 (may differ), result of type T ---------------------------

using PowBaseTypes = TypeList<float, double, int32_t, int64_t, Float16, BFloat16>;
using PowExponentTypes = AllNumericTypes;

// Exact integer power by squaring (wrapping on overflow); negative exponents truncate 1/a^-e toward 0.
template <typename T, typename E>
T IntegerPow(T base, E exponent) {
  if constexpr (std::is_signed_v<E>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  using U = WrapType<T>;
  U result = 1;
  U factor = static_cast<U>(base);
  for (auto e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result = static_cast<U>(result * factor);
    factor = static_cast<U>(factor * factor);
  }
  return static_cast<T>(result);
}

template <typename T, typename E>
T PowElement(T base, E exponent) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<E>) {
    return IntegerPow(base, exponent);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::pow(static_cast<double>(base), static_cast<double>(Load(exponent))));
  } else {
    using C = ComputeType<T>;
    return Store<T>(std::pow(Load(base), static_cast<C>(Load(exponent))));
  }
}

class PowKernel : public Kernel {
 public:
  explicit PowKernel(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& base = ctx.Input(0);
    const Tensor& exponent = ctx.Input(1);
    const Shape exponent_shape = OperandShape(ctx.node(), base.shape(), exponent.shape());
    const Shape out_shape = BroadcastShapes(ctx.node(), base.shape(), exponent_shape);
    DispatchType(base.type(), PowBaseTypes{}, ctx.node(), [&](auto base_tag) {
      using T = typename decltype(base_tag)::type;
      Tensor& out = ctx.Output(0, base.type(), out_shape);
      if (TrySquareOrRoot<T>(ctx, base, exponent, out)) return;
      DispatchType(exponent.type(), PowExponentTypes{}, ctx.node(), [&](auto exponent_tag) {
        using E = typename decltype(exponent_tag)::type;
        BinaryBroadcast(ctx.thread_pool(), base.Data<T>(), base.shape(), exponent.Data<E>(), exponent_shape,
                        out.Data<T>(), out_shape, [](T b, E e) { return PowElement(b, e); });
      });
    });
  }

 private:
  // Fast paths for a scalar floating-point exponent of 2 or 0.5 (x*x, sqrt), common in normalizations.
  template <typename T>
  static bool TrySquareOrRoot(KernelContext& ctx, const Tensor& base, const Tensor& exponent, Tensor& out) {
    if constexpr (std::is_integral_v<T>) {
      return false;
    } else {
      if (exponent.NumElements() != 1 || exponent.type() != DataType::kFloat || out.shape() != base.shape()) return false;
      const float e = exponent.Data<float>()[0];
      using C = ComputeType<T>;
      if (e == 2.0f) {
        UnaryMap(ctx.thread_pool(), base.Data<T>(), out.Data<T>(), base.NumElements(),
                 [](T x) { return Store<T>(Load(x) * Load(x)); });
        return true;
      }
      if (e == 0.5f) {
        UnaryMap(ctx.thread_pool(), base.Data<T>(), out.Data<T>(), base.NumElements(),
                 [](T x) { return Store<T>(std::sqrt(static_cast<C>(Load(x)))); });
        return true;
      }
      return false;
    }
  }
};

// ---- Where(condition, X, Y) ----------------------------------------------------------------------

// The unsigned integer with T's size, for selecting T values with bit masks.
template <size_t kBytes>
struct UnsignedOfSize;
template <>
struct UnsignedOfSize<1> {
  using type = uint8_t;
};
template <>
struct UnsignedOfSize<2> {
  using type = uint16_t;
};
template <>
struct UnsignedOfSize<4> {
  using type = uint32_t;
};
template <>
struct UnsignedOfSize<8> {
  using type = uint64_t;
};

// One span of Where with compile-time operand strides (0 or 1). Both values are loaded and blended
// with a mask: a branch on a random condition mispredicts half the time and keeps the loop scalar.
template <typename T, int kC, int kX, int kY>
void WhereSpan(const bool* c, const T* x, const T* y, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, std::string>) {
    for (int64_t i = 0; i < n; ++i) out[i] = c[i * kC] ? x[i * kX] : y[i * kY];
  } else {
    using Bits = typename UnsignedOfSize<sizeof(T)>::type;
    for (int64_t i = 0; i < n; ++i) {
      const auto mask = static_cast<Bits>(Bits(0) - static_cast<Bits>(c[i * kC]));
      const auto a = std::bit_cast<Bits>(x[i * kX]);
      const auto b = std::bit_cast<Bits>(y[i * kY]);
      out[i] = std::bit_cast<T>(static_cast<Bits>((a & mask) | (b & static_cast<Bits>(~mask))));
    }
  }
}

template <typename T>
using WhereSpanFn = void (*)(const bool*, const T*, const T*, T*, int64_t);

template <typename T>
WhereSpanFn<T> SelectWhereSpan(int64_t c_stride, int64_t x_stride, int64_t y_stride) {
  static constexpr std::array<WhereSpanFn<T>, 8> kSpans = {
      WhereSpan<T, 0, 0, 0>, WhereSpan<T, 0, 0, 1>, WhereSpan<T, 0, 1, 0>, WhereSpan<T, 0, 1, 1>,
      WhereSpan<T, 1, 0, 0>, WhereSpan<T, 1, 0, 1>, WhereSpan<T, 1, 1, 0>, WhereSpan<T, 1, 1, 1>};
  return kSpans[c_stride * 4 + x_stride * 2 + y_stride];
}

class WhereKernel : public Kernel {
 public:
  explicit WhereKernel(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& condition = ctx.Input(0);
    const Tensor& x = ctx.Input(1);
    const Tensor& y = ctx.Input(2);
    CheckSameType(ctx.node(), x, y, 2);
    const std::array<Shape, 3> shapes = {condition.shape(), x.shape(), y.shape()};
    const Shape out_shape = BroadcastShapes(ctx.node(), shapes);
    const BroadcastPlan<3> plan(out_shape, {&shapes[0], &shapes[1], &shapes[2]});
    DispatchType(x.type(), AnyTypes{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor& out = ctx.Output(0, x.type(), out_shape);
      const bool* c = condition.Data<bool>();
      const T* px = x.Data<T>();
      const T* py = y.Data<T>();
      T* po = out.Data<T>();
      const WhereSpanFn<T> span = SelectWhereSpan<T>(plan.inner_stride(0), plan.inner_stride(1), plan.inner_stride(2));
      ParallelForEachSpan(ctx.thread_pool(), plan, [&](int64_t o, const std::array<int64_t, 3>& in, int64_t n) {
        span(c + in[0], px + in[1], py + in[2], po + o, n);
      });
    });
  }
};

// ---- variadic Max, Min, Sum, Mean ----------------------------------------------------------------

template <typename Op, typename Types, bool kMean>
class VariadicKernel : public Kernel {
 public:
  explicit VariadicKernel(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const size_t n = ctx.NumInputs();
    std::vector<Shape> shapes;
    for (size_t i = 0; i < n; ++i) {
      CheckSameType(ctx.node(), ctx.Input(0), ctx.Input(i), i);
      shapes.push_back(ctx.Input(i).shape());
    }
    const Shape out_shape = BroadcastShapes(ctx.node(), shapes);
    DispatchType(ctx.Input(0).type(), Types{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = ctx.Output(0, DataTypeOf<T>(), out_shape).template Data<T>();
      Accumulate<T>(ctx, out, out_shape);
      if constexpr (kMean) {
        using C = ComputeType<T>;
        const C count = static_cast<C>(n);
        UnaryMap(ctx.thread_pool(), out, out, out_shape.NumElements(), [count](T v) { return Store<T>(Load(v) / count); });
      }
    });
  }

 private:
  // out = op(... op(op(in0, in1), in2) ..., in_{n-1}); a single input is copied.
  template <typename T>
  void Accumulate(KernelContext& ctx, T* out, const Shape& out_shape) const {
    const ThreadPool& pool = ctx.thread_pool();
    const Tensor& first = ctx.Input(0);
    if (ctx.NumInputs() == 1) {
      std::copy(first.Data<T>(), first.Data<T>() + first.NumElements(), out);
      return;
    }
    const auto op = LiftBinary<T>(Op{});
    const Tensor& second = ctx.Input(1);
    BinaryBroadcast(pool, first.Data<T>(), first.shape(), second.Data<T>(), second.shape(), out, out_shape, op);
    for (size_t i = 2; i < ctx.NumInputs(); ++i) {
      const Tensor& next = ctx.Input(i);
      BinaryBroadcast(pool, static_cast<const T*>(out), out_shape, next.Data<T>(), next.shape(), out, out_shape, op);
    }
  }
};

// ---- unary operations ----------------------------------------------------------------------------

struct NegOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(WrapType<C>(0) - static_cast<WrapType<C>>(x));
    return -x;
  }
};
struct AbsOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    return x < C(0) ? NegOp{}(x) : x;
  }
};
struct SignOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return static_cast<C>(x != 0);
    return static_cast<C>((x > C(0)) - (x < C(0)));
  }
};
struct SqrtOp {
  template <typename C>
  C operator()(C x) const { return std::sqrt(x); }
};
struct ExpOp {
  template <typename C>
  C operator()(C x) const { return Exp(x); }
};
struct LogOp {
  template <typename C>
  C operator()(C x) const { return std::log(x); }
};
struct ReciprocalOp {
  template <typename C>
  C operator()(C x) const { return C(1) / x; }
};
struct FloorOp {
  template <typename C>
  C operator()(C x) const { return std::floor(x); }
};
struct CeilOp {
  template <typename C>
  C operator()(C x) const { return std::ceil(x); }
};
// Halves round to even (the default floating-point rounding mode), as ONNX Round specifies.
struct RoundOp {
  template <typename C>
  C operator()(C x) const { return std::nearbyint(x); }
};
struct ErfOp {
  template <typename C>
  C operator()(C x) const { return Erf(x); }
};
struct SinOp {
  template <typename C>
  C operator()(C x) const { return std::sin(x); }
};
struct CosOp {
  template <typename C>
  C operator()(C x) const { return std::cos(x); }
};
struct TanOp {
  template <typename C>
  C operator()(C x) const { return std::tan(x); }
};
struct AsinOp {
  template <typename C>
  C operator()(C x) const { return std::asin(x); }
};
struct AcosOp {
  template <typename C>
  C operator()(C x) const { return std::acos(x); }
};
struct AtanOp {
  template <typename C>
  C operator()(C x) const { return std::atan(x); }
};
struct SinhOp {
  template <typename C>
  C operator()(C x) const { return std::sinh(x); }
};
struct CoshOp {
  template <typename C>
  C operator()(C x) const { return std::cosh(x); }
};
struct AsinhOp {
  template <typename C>
  C operator()(C x) const { return std::asinh(x); }
};
struct AcoshOp {
  template <typename C>
  C operator()(C x) const { return std::acosh(x); }
};
struct AtanhOp {
  template <typename C>
  C operator()(C x) const { return std::atanh(x); }
};

// y = x - bias above lambd, x + bias below -lambd, 0 in between; integers compute in double.
class ShrinkOp {
 public:
  explicit ShrinkOp(const Node& node) : lambd_(node.GetFloat("lambd", 0.5f)), bias_(node.GetFloat("bias", 0.0f)) {}
  template <typename C>
  C operator()(C x) const {
    using F = std::conditional_t<std::is_floating_point_v<C>, C, double>;
    const F v = static_cast<F>(x);
    const F lambd = static_cast<F>(lambd_);
    const F bias = static_cast<F>(bias_);
    return static_cast<C>(v < -lambd ? v + bias : (v > lambd ? v - bias : F(0)));
  }

 private:
  float lambd_, bias_;
};
struct NotOp {
  bool operator()(bool x) const { return !x; }
};
struct IsNaNOp {
  template <typename C>
  bool operator()(C x) const { return std::isnan(x); }
};
class IsInfOp {
 public:
  explicit IsInfOp(const Node& node)
      : negative_(node.GetInt("detect_negative", 1) != 0), positive_(node.GetInt("detect_positive", 1) != 0) {}
  template <typename C>
  bool operator()(C x) const { return std::isinf(x) && (x > 0 ? positive_ : negative_); }

 private:
  bool negative_, positive_;
};

// ---- registration --------------------------------------------------------------------------------

KernelDef Def(const std::string& op_type, int since, std::map<int, std::vector<DataType>> input_types) {
  KernelDef def;
  def.op_type = op_type;
  def.since_version = since;
  def.until_version = kLatestOpset;
  def.input_types = std::move(input_types);
  return def;
}

// Ops registered from their first opset: before opset 7 the binary ones broadcast the legacy way
// (OperandShape) and accept attribute consumed_inputs, which only ever concerned memory reuse.
template <typename Op, typename Types>
void RegisterBinary(KernelRegistry& registry, const std::string& op_type, int since) {
  const std::vector<DataType> types = DataTypesOf(Types{});
  registry.Register<BinaryKernel<Op, Types>>(Def(op_type, since, {{0, types}, {1, types}}));
}

// Before opset 8 every input has the same shape, a special case of numpy broadcasting.
template <typename Op, typename Types, bool kMean = false>
void RegisterVariadic(KernelRegistry& registry, const std::string& op_type) {
  registry.Register<VariadicKernel<Op, Types, kMean>>(Def(op_type, 1, {{0, DataTypesOf(Types{})}}));
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& registry) {
  RegisterBinary<AddOp, AllNumericTypes>(registry, "Add", 1);
  RegisterBinary<SubOp, AllNumericTypes>(registry, "Sub", 1);
  RegisterBinary<MulOp, AllNumericTypes>(registry, "Mul", 1);
  RegisterBinary<DivOp, AllNumericTypes>(registry, "Div", 1);
  RegisterBinary<ModOp, AllNumericTypes>(registry, "Mod", 10);
  RegisterBinary<BitShiftOp, UnsignedTypes>(registry, "BitShift", 11);
  RegisterBinary<BitShiftOp, TypeList<int8_t, int16_t, int32_t, int64_t>>(registry, "BitShift", 28);
  registry.Register<PowKernel>(
      Def("Pow", 1, {{0, DataTypesOf(PowBaseTypes{})}, {1, DataTypesOf(PowExponentTypes{})}}));

  RegisterBinary<EqualOp, EqualityTypes>(registry, "Equal", 1);
  RegisterBinary<LessOp, ComparableTypes>(registry, "Less", 1);
  RegisterBinary<GreaterOp, ComparableTypes>(registry, "Greater", 1);
  RegisterBinary<LessOrEqualOp, ComparableTypes>(registry, "LessOrEqual", 12);
  RegisterBinary<GreaterOrEqualOp, ComparableTypes>(registry, "GreaterOrEqual", 12);
  RegisterBinary<AndOp, TypeList<bool>>(registry, "And", 1);
  RegisterBinary<OrOp, TypeList<bool>>(registry, "Or", 1);
  RegisterBinary<XorOp, TypeList<bool>>(registry, "Xor", 1);
  RegisterUnary<NotOp, TypeList<bool>>(registry, "Not", 1, kLatestOpset);

  const std::vector<DataType> any_types = DataTypesOf(AnyTypes{});
  registry.Register<WhereKernel>(Def("Where", 9, {{0, {DataType::kBool}}, {1, any_types}, {2, any_types}}));

  RegisterVariadic<MaxOp, AllNumericTypes>(registry, "Max");
  RegisterVariadic<MinOp, AllNumericTypes>(registry, "Min");
  RegisterVariadic<AddOp, FloatTypes>(registry, "Sum");
  RegisterVariadic<AddOp, FloatTypes, true>(registry, "Mean");

  RegisterUnary<NegOp, SignedNumericTypes>(registry, "Neg", 1, kLatestOpset);
  RegisterUnary<AbsOp, AllNumericTypes>(registry, "Abs", 1, kLatestOpset);
  RegisterUnary<SignOp, AllNumericTypes>(registry, "Sign", 9, kLatestOpset);
  RegisterUnary<SqrtOp, FloatTypes>(registry, "Sqrt", 1, kLatestOpset);
  RegisterUnary<ExpOp, FloatTypes>(registry, "Exp", 1, kLatestOpset);
  RegisterUnary<LogOp, FloatTypes>(registry, "Log", 1, kLatestOpset);
  RegisterUnary<ReciprocalOp, FloatTypes>(registry, "Reciprocal", 1, kLatestOpset);
  RegisterUnary<FloorOp, FloatTypes>(registry, "Floor", 1, kLatestOpset);
  RegisterUnary<CeilOp, FloatTypes>(registry, "Ceil", 1, kLatestOpset);
  RegisterUnary<RoundOp, FloatTypes>(registry, "Round", 11, kLatestOpset);
  RegisterUnary<ErfOp, FloatTypes>(registry, "Erf", 9, kLatestOpset);
  RegisterUnary<SinOp, FloatTypes>(registry, "Sin", 7, kLatestOpset);
  RegisterUnary<CosOp, FloatTypes>(registry, "Cos", 7, kLatestOpset);
  RegisterUnary<TanOp, FloatTypes>(registry, "Tan", 7, kLatestOpset);
  RegisterUnary<AsinOp, FloatTypes>(registry, "Asin", 7, kLatestOpset);
  RegisterUnary<AcosOp, FloatTypes>(registry, "Acos", 7, kLatestOpset);
  RegisterUnary<AtanOp, FloatTypes>(registry, "Atan", 7, kLatestOpset);
  RegisterUnary<SinhOp, FloatTypes>(registry, "Sinh", 9, kLatestOpset);
  RegisterUnary<CoshOp, FloatTypes>(registry, "Cosh", 9, kLatestOpset);
  RegisterUnary<AsinhOp, FloatTypes>(registry, "Asinh", 9, kLatestOpset);
  RegisterUnary<AcoshOp, FloatTypes>(registry, "Acosh", 9, kLatestOpset);
  RegisterUnary<AtanhOp, FloatTypes>(registry, "Atanh", 9, kLatestOpset);
  RegisterUnary<ShrinkOp, AllNumericTypes>(registry, "Shrink", 9, kLatestOpset);
  RegisterUnary<IsNaNOp, FloatTypes>(registry, "IsNaN", 9, kLatestOpset);
  RegisterUnary<IsInfOp, FloatTypes>(registry, "IsInf", 10, kLatestOpset);
}

}  // namespace tessera::cpu
