// Building blocks shared by the CPU elementwise kernels (math/elementwise.cc, math/activations.cc):
// element-type dispatch, the compute type of each storage type (16-bit floats compute in float), and
// a generic unary kernel.
//
// Operations are small function objects templated on the compute type, e.g.
//   struct ReluOp { template <typename C> C operator()(C x) const { return x > C(0) ? x : C(0); } };
// An operation with attributes has a constructor taking the Node; it is built once per kernel.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "providers/cpu/common/broadcast.h"
#include "tessera/ep/kernel.h"

namespace tessera::cpu {

template <typename... Ts>
struct TypeList {};

template <typename... Ts>
std::vector<DataType> DataTypesOf(TypeList<Ts...>) {
  return {DataTypeOf<Ts>()...};
}

// Calls fn(std::type_identity<T>{}) for the T in `Types` whose DataType is `type`; throws
// kNotImplemented naming `node` when there is none.
template <typename... Ts, typename Fn>
void DispatchType(DataType type, TypeList<Ts...>, const Node& node, Fn&& fn) {
  const bool found = ((type == DataTypeOf<Ts>() ? (fn(std::type_identity<Ts>{}), true) : false) || ...);
  if (!found) {
    Fail(ErrorCode::kNotImplemented, node.Describe(), ": element type ", DataTypeName(type),
         " is not supported by the CPU kernel");
  }
}

// The newest default-domain opset the CPU kernels are written against.
inline constexpr int kLatestOpset = kLatestOnnxOpset;

using FloatTypes = TypeList<float, double, Float16, BFloat16>;
using SignedNumericTypes = TypeList<float, double, int32_t, int64_t, int8_t, int16_t, Float16, BFloat16>;
using NumericTypes = TypeList<float, double, int32_t, int64_t, int8_t, uint8_t, Float16, BFloat16>;
// Every numeric type ONNX has (the type constraint of Add, Max, Mod, Shrink, ... in recent opsets).
using AllNumericTypes = TypeList<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                                 uint64_t, Float16, BFloat16>;

// The type arithmetic happens in: 16-bit floats widen to float, everything else is itself.
template <typename T>
struct ComputeTypeOf {
  using type = T;
};
template <>
struct ComputeTypeOf<Float16> {
  using type = float;
};
template <>
struct ComputeTypeOf<BFloat16> {
  using type = float;
};
template <typename T>
using ComputeType = typename ComputeTypeOf<T>::type;

template <typename T>
inline ComputeType<T> Load(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return ToFloat(v);
  } else {
    return v;
  }
}

template <typename T, typename C>
inline T Store(C v) {
  if constexpr (std::is_same_v<T, Float16>) {
    return ToFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return ToBFloat16(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Stores `r` as T when it has T's compute type, else returns it as is (comparisons yield bool).
template <typename T, typename R>
inline auto StoreResult(R r) {
  if constexpr (std::is_same_v<R, ComputeType<T>>) {
    return Store<T>(r);
  } else {
    return r;
  }
}

// `op` on storage type T: loads to the compute type, applies op, stores back. Holds a copy of op.
template <typename T, typename Op>
auto LiftUnary(const Op& op) {
  return [op](T x) { return StoreResult<T>(op(Load(x))); };
}
template <typename T, typename Op>
auto LiftBinary(const Op& op) {
  return [op](T a, T b) { return StoreResult<T>(op(Load(a), Load(b))); };
}

// out[i] = op(in[i]) for i < n, in parallel for large n.
template <typename I, typename O, typename Op>
void UnaryMap(const ThreadPool& pool, const I* in, O* out, int64_t n, Op op) {
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = op(in[i]);
  };
  if (n <= kElementwiseParallelThreshold) {
    run(0, n);
  } else {
    pool.ParallelFor(n, kElementwiseGrain, run);
  }
}

template <typename Op>
Op MakeOp(const Node& node) {
  if constexpr (std::is_constructible_v<Op, const Node&>) {
    return Op(node);
  } else {
    return Op();
  }
}

// y = op(x) with x's shape, for x's element type in Types. y has x's type, or bool for predicates.
template <typename Op, typename Types>
class UnaryKernel : public Kernel {
 public:
  explicit UnaryKernel(const KernelInfo& info) : op_(MakeOp<Op>(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    DispatchType(x.type(), Types{}, ctx.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const auto op = LiftUnary<T>(op_);
      using R = std::invoke_result_t<decltype(op), T>;
      Tensor& y = ctx.Output(0, DataTypeOf<R>(), x.shape());
      UnaryMap(ctx.thread_pool(), x.Data<T>(), y.Data<R>(), x.NumElements(), op);
    });
  }

 private:
  Op op_;
};

// Registers UnaryKernel<Op, Types> for op_type over opsets [since, until].
template <typename Op, typename Types>
void RegisterUnary(KernelRegistry& registry, const std::string& op_type, int since, int until) {
  KernelDef def;
  def.op_type = op_type;
  def.since_version = since;
  def.until_version = until;
  def.input_types[0] = DataTypesOf(Types{});
  registry.Register<UnaryKernel<Op, Types>>(std::move(def));
}

}  // namespace tessera::cpu
