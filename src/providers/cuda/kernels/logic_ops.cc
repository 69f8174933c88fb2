// Comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual), logic (And, Or, Xor, Not), IsNaN, IsInf,
// Where and Cast, for numeric and bool element types, with numpy broadcasting.
#include <climits>

#include "providers/cpu/common/broadcast.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

// The broadcast index of a and b into `out`, or nullptr when all three have one shape.
const launch::BroadcastIndex* IndexFor(const KernelContext& ctx, const Shape& out, const Shape& a, const Shape& b,
                                       launch::BroadcastIndex& storage) {
  if (a == out && b == out) return nullptr;
  storage = MakeBroadcastIndex(ctx, out, a, b);
  return &storage;
}

class CompareKernel : public Kernel {
 public:
  CompareKernel(const KernelInfo& info, launch::CompareOp op) : ep_(CudaEpOf(info)), op_(op) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    if (a.type() != b.type())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": inputs are ", DataTypeName(a.type()), " and ",
           DataTypeName(b.type()));
    const Shape shape = cpu::BroadcastShapes(ctx.node(), a.shape(), b.shape());
    Tensor& out = ctx.Output(0, DataType::kBool, shape);
    if (out.NumElements() == 0) return;
    launch::BroadcastIndex storage;
    CheckLaunch(ctx,
                launch::Compare(op_, ScalarTypeOf(ctx, a.type()), a.raw_data(), b.raw_data(),
                                static_cast<bool*>(out.raw_data()), out.NumElements(),
                                IndexFor(ctx, shape, a.shape(), b.shape(), storage), StreamOf(ctx)),
                "comparison launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  launch::CompareOp op_;
};

class LogicalKernel : public Kernel {
 public:
  LogicalKernel(const KernelInfo& info, launch::LogicalOp op) : ep_(CudaEpOf(info)), op_(op) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& a = ctx.Input(0);
    const Tensor& b = ctx.Input(1);
    const Shape shape = cpu::BroadcastShapes(ctx.node(), a.shape(), b.shape());
    Tensor& out = ctx.Output(0, DataType::kBool, shape);
    if (out.NumElements() == 0) return;
    launch::BroadcastIndex storage;
    CheckLaunch(ctx,
                launch::Logical(op_, static_cast<const bool*>(a.raw_data()), static_cast<const bool*>(b.raw_data()),
                                static_cast<bool*>(out.raw_data()), out.NumElements(),
                                IndexFor(ctx, shape, a.shape(), b.shape(), storage), StreamOf(ctx)),
                "logical launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  launch::LogicalOp op_;
};

class NotKernel : public Kernel {
 public:
  explicit NotKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, DataType::kBool, x.shape());
    if (y.NumElements() == 0) return;
    CheckLaunch(ctx,
                launch::Not(static_cast<const bool*>(x.raw_data()), static_cast<bool*>(y.raw_data()), y.NumElements(),
                            StreamOf(ctx)),
                "Not launch");
  }

 private:
  const CudaExecutionProvider& ep_;
};

// IsNaN, and IsInf with detect_positive / detect_negative.
class FloatClassKernel : public Kernel {
 public:
  FloatClassKernel(const KernelInfo& info, bool nan)
      : ep_(CudaEpOf(info)),
        nan_(nan),
        positive_(info.node().GetInt("detect_positive", 1) != 0),
        negative_(info.node().GetInt("detect_negative", 1) != 0) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, DataType::kBool, x.shape());
    if (y.NumElements() == 0) return;
    CheckLaunch(ctx,
                launch::ClassifyFloats(FloatElementType(ctx, x.type()), x.raw_data(), static_cast<bool*>(y.raw_data()),
                                       y.NumElements(), nan_, positive_, negative_, StreamOf(ctx)),
                "IsNaN/IsInf launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  bool nan_, positive_, negative_;
};

class WhereKernel : public Kernel {
 public:
  explicit WhereKernel(const KernelInfo& info) : ep_(CudaEpOf(info)) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& condition = ctx.Input(0);
    const Tensor& x = ctx.Input(1);
    const Tensor& y = ctx.Input(2);
    if (condition.type() != DataType::kBool || x.type() != y.type())
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": expects a bool condition and X, Y of one type, got ",
           condition.Describe(), ", ", x.Describe(), ", ", y.Describe());
    const Shape shapes[] = {condition.shape(), x.shape(), y.shape()};
    const Shape shape = cpu::BroadcastShapes(ctx.node(), shapes);
    Tensor& out = ctx.Output(0, x.type(), shape);
    if (out.NumElements() == 0) return;
    launch::WhereIndex index;
    index.values = MakeBroadcastIndex(ctx, shape, x.shape(), y.shape());
    const launch::BroadcastIndex for_condition = MakeBroadcastIndex(ctx, shape, condition.shape(), Shape{});
    std::copy(std::begin(for_condition.a_strides), std::end(for_condition.a_strides), index.condition_strides);
    CheckLaunch(ctx,
                launch::Where(static_cast<int>(SizeOf(x.type())), static_cast<const bool*>(condition.raw_data()),
                              x.raw_data(), y.raw_data(), out.raw_data(), out.NumElements(), index, StreamOf(ctx)),
                "Where launch");
  }

 private:
  const CudaExecutionProvider& ep_;
};

class CastKernel : public Kernel {
 public:
  explicit CastKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), to_(static_cast<DataType>(info.node().GetInt("to"))) {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, to_, x.shape());
    if (y.NumElements() == 0) return;
    if (x.type() == to_) {
      CheckCuda(cudaMemcpyAsync(y.raw_data(), x.raw_data(), x.SizeInBytes(), cudaMemcpyDeviceToDevice, StreamOf(ctx)),
                ctx.node(), ": copy");
      return;
    }
    CheckLaunch(ctx,
                launch::Cast(ScalarTypeOf(ctx, x.type()), ScalarTypeOf(ctx, to_), x.raw_data(), y.raw_data(),
                             y.NumElements(), StreamOf(ctx)),
                "Cast launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  DataType to_;
};

void RegisterCompare(KernelRegistry& registry, const char* op, int since, launch::CompareOp kind) {
  registry.Register(MakeDef(op, since, INT_MAX, ScalarTypes()),
                    [kind](const KernelInfo& info) { return std::make_unique<CompareKernel>(info, kind); });
}

void RegisterLogical(KernelRegistry& registry, const char* op, launch::LogicalOp kind) {
  registry.Register(MakeDef(op, 7, INT_MAX, {DataType::kBool}),
                    [kind](const KernelInfo& info) { return std::make_unique<LogicalKernel>(info, kind); });
}

}  // namespace

void RegisterLogicKernels(KernelRegistry& registry) {
  RegisterCompare(registry, "Equal", 7, launch::CompareOp::kEqual);
  RegisterCompare(registry, "Less", 7, launch::CompareOp::kLess);
  RegisterCompare(registry, "LessOrEqual", 12, launch::CompareOp::kLessOrEqual);
  RegisterCompare(registry, "Greater", 7, launch::CompareOp::kGreater);
  RegisterCompare(registry, "GreaterOrEqual", 12, launch::CompareOp::kGreaterOrEqual);
  RegisterLogical(registry, "And", launch::LogicalOp::kAnd);
  RegisterLogical(registry, "Or", launch::LogicalOp::kOr);
  RegisterLogical(registry, "Xor", launch::LogicalOp::kXor);
  registry.Register<NotKernel>(MakeDef("Not", 1, INT_MAX, {DataType::kBool}));
  for (const bool nan : {true, false})
    registry.Register(MakeDef(nan ? "IsNaN" : "IsInf", nan ? 9 : 10, INT_MAX, FloatTypes()),
                      [nan](const KernelInfo& info) { return std::make_unique<FloatClassKernel>(info, nan); });
  KernelDef where = MakeDef("Where", 9, INT_MAX, {DataType::kBool});
  where.input_types[1] = AllDeviceTypes();
  registry.Register<WhereKernel>(std::move(where));
  registry.Register<CastKernel>(MakeDef("Cast", 6, INT_MAX, ScalarTypes()));
}

bool CastTargetIsSupported(const Node& node) {
  const DataType to = static_cast<DataType>(node.GetInt("to", 0));
  for (DataType t : ScalarTypes())
    if (t == to) return true;
  return false;
}

}  // namespace tessera::cuda
