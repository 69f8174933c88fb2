// Elementwise kernels: Add, Sub, Mul, Div (numpy broadcasting; float, float16, int32, int64), activations and
// unary math (Relu, Sigmoid, Tanh, Erf, Gelu, Sqrt, Neg, Exp, Log, Abs, Reciprocal, Floor, Ceil; Neg and Abs
// also on int32 and int64), Clip, Pow, and the parameterized activations HardSigmoid, HardSwish, LeakyRelu.
#include <algorithm>
#include <climits>
#include <limits>
#include <optional>
#include <span>

#include "providers/cpu/common/broadcast.h"
#include "providers/cuda/cuda_graph.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

// The element types of the kernels: arithmetic (Add, Sub, Mul, Div, Neg, Abs) or float-only (the rest).
constexpr DataType kArithmeticTypes[] = {DataType::kFloat, DataType::kFloat16, DataType::kInt32, DataType::kInt64};
constexpr DataType kFloatOnlyTypes[] = {DataType::kFloat, DataType::kFloat16};

std::vector<DataType> ToVector(std::span<const DataType> types) { return {types.begin(), types.end()}; }

// The launch type of `type`, which must be one of `accepted` (the kernel's registered types: a node whose
// types were unknown at partitioning, e.g. inside a Loop body, may bring any type).
launch::ScalarType AcceptedScalarType(const KernelContext& ctx, DataType type, std::span<const DataType> accepted) {
  if (std::find(accepted.begin(), accepted.end(), type) == accepted.end())
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": the CUDA kernel does not handle ", DataTypeName(type));
  return ScalarTypeOf(ctx, type);
}

class BinaryKernel : public Kernel {
 public:
  BinaryKernel(const KernelInfo& info, launch::BinaryOp op) : ep_(CudaEpOf(info)), op_(op) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    if (a.type() != b.type())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": inputs are ", DataTypeName(a.type()), " and ",
           DataTypeName(b.type()));
    const Shape out_shape = cpu::BroadcastShapes(ctx.node(), a.shape(), b.shape());
    Tensor& out = ctx.Output(0, a.type(), out_shape);
    if (out.NumElements() == 0) return;
    const launch::ScalarType type = AcceptedScalarType(ctx, a.type(), kArithmeticTypes);
    if (a.shape() == out_shape && b.shape() == out_shape) {
      CheckLaunch(ctx, launch::Binary(op_, type, a.raw_data(), b.raw_data(), out.raw_data(), out.NumElements(), nullptr,
                                      StreamOf(ctx)),
                  "elementwise launch");
      return;
    }
    const bool b_is_row = a.shape() == out_shape && IsTrailingRow(b.shape(), out_shape);
    if (b_is_row || (b.shape() == out_shape && IsTrailingRow(a.shape(), out_shape))) {
      const Tensor& full = b_is_row ? a : b;
      const Tensor& row = b_is_row ? b : a;
      CheckLaunch(ctx, launch::BinaryRow(op_, type, full.raw_data(), row.raw_data(), out.raw_data(), out.NumElements(),
                                         row.NumElements(), !b_is_row, StreamOf(ctx)),
                  "row broadcast launch");
      return;
    }
    const launch::BroadcastIndex index = MakeBroadcastIndex(ctx, out_shape, a.shape(), b.shape());
    CheckLaunch(ctx, launch::Binary(op_, type, a.raw_data(), b.raw_data(), out.raw_data(), out.NumElements(), &index,
                                    StreamOf(ctx)),
                "broadcast launch");
  }

 private:
  // Whether `operand` is `out`'s last dimensions (leading 1s allowed): it repeats every NumElements().
  static bool IsTrailingRow(const Shape& operand, const Shape& out) {
    size_t skip = 0;
    while (skip < operand.rank() && operand[skip] == 1) ++skip;
    const size_t kept = operand.rank() - skip;
    if (kept > out.rank() || operand.NumElements() == 0) return false;
    for (size_t k = 0; k < kept; ++k)
      if (operand[skip + k] != out[out.rank() - kept + k]) return false;
    return true;
  }

  const CudaExecutionProvider& ep_;
  launch::BinaryOp op_;
};

class UnaryKernel : public Kernel {
 public:
  // With `activation`, y = activation(x) (launch::Activation) instead of `op`.
  UnaryKernel(const KernelInfo& info, launch::UnaryOp op, std::span<const DataType> types,
              std::optional<launch::EpilogueActivation> activation = std::nullopt)
      : ep_(CudaEpOf(info)), op_(op), types_(types), activation_(activation) {
    if (op == launch::UnaryOp::kGelu && info.node().GetString("approximate", "none") == "tanh")
      op_ = launch::UnaryOp::kGeluTanh;
  }

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (y.NumElements() == 0) return;
    const launch::ScalarType type = AcceptedScalarType(ctx, x.type(), types_);
    CheckLaunch(ctx,
                activation_ ? launch::Activation(FloatElementType(ctx, x.type()), x.raw_data(), y.raw_data(),
                                                 y.NumElements(), *activation_, StreamOf(ctx))
                            : launch::Unary(op_, type, x.raw_data(), y.raw_data(), y.NumElements(), StreamOf(ctx)),
                "activation launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  launch::UnaryOp op_;
  std::span<const DataType> types_;  // static storage
  std::optional<launch::EpilogueActivation> activation_;
};

// Clip: bounds from attributes (opset < 11) or from optional scalar inputs 1 and 2 read on the host.
class ClipKernel : public Kernel {
 public:
  explicit ClipKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)),
        attribute_min_(info.node().GetFloat("min", std::numeric_limits<float>::lowest())),
        attribute_max_(info.node().GetFloat("max", std::numeric_limits<float>::max())) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const float lo = Bound(ctx, 1, attribute_min_);
    const float hi = Bound(ctx, 2, attribute_max_);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (y.NumElements() == 0) return;
    CheckLaunch(ctx, launch::Clip(FloatElementType(ctx, x.type()), x.raw_data(), y.raw_data(), y.NumElements(), lo, hi,
                                  StreamOf(ctx)),
                "Clip launch");
  }

 private:
  static float Bound(const KernelContext& ctx, size_t input, float fallback) {
    const Tensor* t = ctx.OptionalInput(input);
    if (t == nullptr) return fallback;
    if (t->NumElements() != 1)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", input, " must be a scalar, got ",
           t->shape().ToString());
    if (t->type() == DataType::kFloat16) return ToFloat(t->Data<Float16>()[0]);
    return t->Data<float>()[0];
  }

  const CudaExecutionProvider& ep_;
  float attribute_min_, attribute_max_;
};

// Pow: a float base and a scalar exponent of any numeric type, read on the host (the models' Pow nodes
// square or take roots); a tensor exponent is not supported by the CUDA kernel.
// The exponents of a host tensor of any numeric type, as float.
std::vector<float> ExponentValues(const KernelContext& ctx, const Tensor& t) {
  const auto convert = [&t](auto tag) {
    using T = decltype(tag);
    std::vector<float> values;
    for (T v : t.Span<T>()) values.push_back(static_cast<float>(v));
    return values;
  };
  switch (t.type()) {
    case DataType::kFloat: return convert(float{});
    case DataType::kDouble: return convert(double{});
    case DataType::kInt8: return convert(int8_t{});
    case DataType::kUInt8: return convert(uint8_t{});
    case DataType::kInt16: return convert(int16_t{});
    case DataType::kUInt16: return convert(uint16_t{});
    case DataType::kInt32: return convert(int32_t{});
    case DataType::kUInt32: return convert(uint32_t{});
    case DataType::kInt64: return convert(int64_t{});
    case DataType::kUInt64: return convert(uint64_t{});
    default:
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": exponents of type ", DataTypeName(t.type()),
           " are not supported");
  }
}

class PowKernel : public Kernel {
 public:
  explicit PowKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Tensor& exponent = ctx.Input(1);  // on the host
    const launch::ElementType type = FloatElementType(ctx, x.type());
    Tensor& y = ctx.Output(0, x.type(), cpu::BroadcastShapes(ctx.node(), x.shape(), exponent.shape()));
    if (y.NumElements() == 0) return;
    const cudaStream_t stream = StreamOf(ctx);
    if (exponent.NumElements() == 1) {
      CheckLaunch(ctx,
                  launch::PowScalar(type, x.raw_data(), y.raw_data(), y.NumElements(),
                                    static_cast<float>(ScalarAsDouble(ctx, exponent)), stream),
                  "Pow launch");
      return;
    }
    // A tensor of exponents (any numeric type): converted to X's type on the device, then broadcast.
    const std::vector<float> values = ExponentValues(ctx, exponent);
    Tensor as_float = Tensor::Allocate(DataType::kFloat, exponent.shape(), ctx.allocator());
    if (WholeRunCaptureOnThisThread()) {
      // Host exponents are constants or derive from shapes, fixed for the graph: uploaded now rather than by a node
      // reading `values` (gone at replay); a captured run's allocations live as long as its graph.
      UploadOutsideCapture(as_float.raw_data(), values.data(), values.size() * sizeof(float));
    } else {
      // From pageable memory, cudaMemcpyAsync has staged the values when it returns: `values` may go.
      CheckCuda(cudaMemcpyAsync(as_float.raw_data(), values.data(), values.size() * sizeof(float),
                                cudaMemcpyHostToDevice, stream),
                ctx.node(), ": copying the exponents");
    }
    Tensor as_x_type = as_float;
    if (x.type() == DataType::kFloat16) {
      as_x_type = Tensor::Allocate(DataType::kFloat16, exponent.shape(), ctx.allocator());
      CheckLaunch(ctx,
                  launch::Cast(launch::ScalarType::kFloat, launch::ScalarType::kHalf, as_float.raw_data(),
                               as_x_type.raw_data(), as_float.NumElements(), stream),
                  "exponent cast");
    }
    const launch::BroadcastIndex index = MakeBroadcastIndex(ctx, y.shape(), x.shape(), exponent.shape());
    CheckLaunch(ctx,
                launch::Binary(launch::BinaryOp::kPow, type, x.raw_data(), as_x_type.raw_data(), y.raw_data(),
                               y.NumElements(), &index, stream),
                "Pow launch");
  }

 private:
  const CudaExecutionProvider& ep_;
};

// HardSigmoid (max(0, min(1, alpha * x + beta))), HardSwish (x * HardSigmoid with alpha 1/6, beta 1/2) and
// LeakyRelu run UnaryKernel with the activation and the node's alpha and beta; they have kernels mainly so that the
// fusion passes fold them into convolution epilogues where they follow one.
void RegisterActivation(KernelRegistry& registry, const char* op, int since, launch::EpilogueActivation::Kind kind,
                        float alpha, float beta) {
  registry.Register(MakeDef(op, since, INT_MAX, FloatTypes()), [=](const KernelInfo& info) {
    launch::EpilogueActivation activation;
    activation.kind = kind;
    activation.alpha = info.node().GetFloat("alpha", alpha);
    activation.beta = info.node().GetFloat("beta", beta);
    return std::make_unique<UnaryKernel>(info, launch::UnaryOp::kRelu, kFloatOnlyTypes, activation);
  });
}

void RegisterBinary(KernelRegistry& registry, const char* op, launch::BinaryOp kind) {
  registry.Register(MakeDef(op, 7, INT_MAX, ToVector(kArithmeticTypes)),
                    [kind](const KernelInfo& info) { return std::make_unique<BinaryKernel>(info, kind); });
}

void RegisterUnary(KernelRegistry& registry, const char* op, launch::UnaryOp kind, int since = 6,
                   std::span<const DataType> types = kFloatOnlyTypes) {
  registry.Register(MakeDef(op, since, INT_MAX, ToVector(types)), [kind, types](const KernelInfo& info) {
    return std::make_unique<UnaryKernel>(info, kind, types);
  });
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& registry) {
  RegisterBinary(registry, "Add", launch::BinaryOp::kAdd);
  RegisterBinary(registry, "Sub", launch::BinaryOp::kSub);
  RegisterBinary(registry, "Mul", launch::BinaryOp::kMul);
  RegisterBinary(registry, "Div", launch::BinaryOp::kDiv);
  RegisterUnary(registry, "Relu", launch::UnaryOp::kRelu);
  RegisterUnary(registry, "Sigmoid", launch::UnaryOp::kSigmoid);
  RegisterUnary(registry, "Tanh", launch::UnaryOp::kTanh);
  RegisterUnary(registry, "Erf", launch::UnaryOp::kErf, 9);
  RegisterUnary(registry, "Gelu", launch::UnaryOp::kGelu, 20);
  RegisterUnary(registry, "Sqrt", launch::UnaryOp::kSqrt);
  RegisterUnary(registry, "Neg", launch::UnaryOp::kNeg, 6, kArithmeticTypes);
  RegisterUnary(registry, "Exp", launch::UnaryOp::kExp);
  RegisterUnary(registry, "Log", launch::UnaryOp::kLog);
  RegisterUnary(registry, "Abs", launch::UnaryOp::kAbs, 6, kArithmeticTypes);
  RegisterUnary(registry, "Reciprocal", launch::UnaryOp::kReciprocal);
  RegisterUnary(registry, "Floor", launch::UnaryOp::kFloor);
  RegisterUnary(registry, "Ceil", launch::UnaryOp::kCeil);
  using Kind = launch::EpilogueActivation::Kind;
  RegisterActivation(registry, "HardSigmoid", 6, Kind::kHardSigmoid, 0.2f, 0.5f);
  RegisterActivation(registry, "HardSwish", 14, Kind::kHardSwish, 0.0f, 0.0f);
  RegisterActivation(registry, "LeakyRelu", 6, Kind::kLeakyRelu, 0.01f, 0.0f);
  KernelDef pow = MakeDef("Pow", 7, INT_MAX, FloatTypes());
  pow.host_inputs = {1};
  registry.Register<PowKernel>(std::move(pow));
  KernelDef clip = MakeDef("Clip", 6, INT_MAX, FloatTypes());
  clip.host_inputs = {1, 2};
  registry.Register<ClipKernel>(std::move(clip));
}

}  // namespace tessera::cuda
