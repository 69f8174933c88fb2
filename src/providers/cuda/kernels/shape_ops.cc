// Reshape, Flatten, Identity, Squeeze, Unsqueeze: outputs alias their input's device buffer with a new
// shape (no copy, no device work). Shape and axes inputs are read on the host.
#include <algorithm>
#include <climits>

#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"
#include "tessera/ep/reshape_target.h"

namespace tessera::cuda {

namespace {

std::vector<int64_t> HostInts(const KernelContext& ctx, size_t input) {
  const Tensor& t = ctx.Input(input);
  if (t.type() != DataType::kInt64)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": input ", input, " must be int64, got ",
         DataTypeName(t.type()));
  return t.ToVector<int64_t>();
}

// Axes from input 1 when present (opset 13+), else from the `axes` attribute.
std::vector<int64_t> Axes(const KernelContext& ctx) {
  if (ctx.HasInput(1)) return HostInts(ctx, 1);
  return ctx.node().GetInts("axes");
}

Shape SqueezeTarget(const KernelContext& ctx, const Shape& in) {
  std::vector<int64_t> axes = Axes(ctx);
  const int64_t rank = static_cast<int64_t>(in.rank());
  for (int64_t& a : axes) a = NormalizeAxis(a, rank, "Squeeze axis");
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i) {
    const bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (listed && in[i] != 1)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": cannot squeeze axis ", i, " of ", in.ToString());
    if (axes.empty() ? in[i] != 1 : !listed) dims.push_back(in[i]);
  }
  return Shape(dims);
}

Shape UnsqueezeTarget(const KernelContext& ctx, const Shape& in) {
  std::vector<int64_t> axes = Axes(ctx);
  const int64_t rank = static_cast<int64_t>(in.rank() + axes.size());
  for (int64_t& a : axes) a = NormalizeAxis(a, rank, "Unsqueeze axis");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": repeated axes");
  std::vector<int64_t> dims;
  size_t next_input = 0;
  for (int64_t i = 0; i < rank; ++i)
    dims.push_back(std::binary_search(axes.begin(), axes.end(), i) ? 1 : in[next_input++]);
  return Shape(dims);
}

Shape FlattenTarget(const KernelContext& ctx, const Shape& in) {
  const int64_t rank = static_cast<int64_t>(in.rank());
  int64_t axis = ctx.node().GetInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank)
    Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": axis ", axis, " is out of range for ", in.ToString());
  return Shape{in.SizeTo(static_cast<size_t>(axis)), in.SizeFrom(static_cast<size_t>(axis))};
}

enum class ShapeOp { kReshape, kFlatten, kSqueeze, kUnsqueeze };

class AliasKernel : public Kernel {
 public:
  AliasKernel(const KernelInfo& /*info*/, ShapeOp op) : op_(op) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    ctx.SetOutput(0, Value(x.Reshaped(Target(ctx, x.shape()))));
  }

 private:
  Shape Target(const KernelContext& ctx, const Shape& in) const {
    switch (op_) {
      case ShapeOp::kReshape:
        return Shape(ReshapeTarget(ctx.node(), in, HostInts(ctx, 1), ctx.node().GetInt("allowzero", 0) != 0));
      case ShapeOp::kFlatten: return FlattenTarget(ctx, in);
      case ShapeOp::kSqueeze: return SqueezeTarget(ctx, in);
      case ShapeOp::kUnsqueeze: return UnsqueezeTarget(ctx, in);
    }
    return in;
  }

  ShapeOp op_;
};

class IdentityKernel : public Kernel {
 public:
  explicit IdentityKernel(const KernelInfo& /*info*/) {}
  void Compute(KernelContext& ctx) const override {
    const Value* input = ctx.InputValue(0);
    ctx.SetOutput(0, input == nullptr ? Value() : *input);
  }
};

KernelDef AliasDef(const char* op, int since, int until, std::vector<int> host_inputs) {
  KernelDef def = MakeDef(op, since, until, AllDeviceTypes());
  def.host_inputs = std::move(host_inputs);
  def.may_alias = true;
  return def;
}

void RegisterAlias(KernelRegistry& registry, KernelDef def, ShapeOp op) {
  registry.Register(std::move(def), [op](const KernelInfo& info) { return std::make_unique<AliasKernel>(info, op); });
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& registry) {
  RegisterAlias(registry, AliasDef("Reshape", 5, INT_MAX, {1}), ShapeOp::kReshape);
  RegisterAlias(registry, AliasDef("Flatten", 1, INT_MAX, {}), ShapeOp::kFlatten);
  RegisterAlias(registry, AliasDef("Squeeze", 1, 12, {}), ShapeOp::kSqueeze);
  RegisterAlias(registry, AliasDef("Squeeze", 13, INT_MAX, {1}), ShapeOp::kSqueeze);
  RegisterAlias(registry, AliasDef("Unsqueeze", 1, 12, {}), ShapeOp::kUnsqueeze);
  RegisterAlias(registry, AliasDef("Unsqueeze", 13, INT_MAX, {1}), ShapeOp::kUnsqueeze);
  registry.Register<IdentityKernel>(AliasDef("Identity", 1, INT_MAX, {}));
}

}  // namespace tessera::cuda
