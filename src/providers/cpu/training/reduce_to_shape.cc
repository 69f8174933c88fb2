// ai.tessera::ReduceToShapeOf(grad, like) (opset 1): the helper the Gradient expansion
// (graph/passes/gradient_expansion.h) uses to undo broadcasting. `like` must broadcast (numpy rules) to
// grad's shape; the output has like's shape and element type of grad, each element the sum of the grad
// elements that the corresponding `like` element was broadcast to. Only like's shape is read.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "providers/cpu/common/broadcast.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

template <typename T>
void SumIntoBroadcastSource(const T* grad, const Shape& grad_shape, T* out, const Shape& out_shape) {
  std::fill(out, out + out_shape.NumElements(), T{});
  const BroadcastPlan<1> plan(grad_shape, {&out_shape});
  const bool contiguous = plan.inner_stride(0) != 0;
  // Serial: different spans may accumulate into the same output elements.
  plan.ForEachSpan(0, plan.size(), [&](int64_t o, const std::array<int64_t, 1>& in, int64_t n) {
    const T* g = grad + o;
    T* dst = out + in[0];
    if (contiguous) {
      for (int64_t i = 0; i < n; ++i) dst[i] += g[i];
    } else {
      T sum{};
      for (int64_t i = 0; i < n; ++i) sum += g[i];
      *dst += sum;
    }
  });
}

class ReduceToShapeOf : public Kernel {
 public:
  explicit ReduceToShapeOf(const KernelInfo&) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& grad = ctx.Input(0);
    const Shape& like = ctx.Input(1).shape();
    CheckUnidirectionalBroadcast(ctx.node(), like, grad.shape(), "like");
    Tensor& out = ctx.Output(0, grad.type(), like);
    if (like == grad.shape()) {
      std::memcpy(out.raw_data(), grad.raw_data(), grad.SizeInBytes());
      return;
    }
    switch (grad.type()) {
      case DataType::kFloat:
        return SumIntoBroadcastSource(grad.Data<float>(), grad.shape(), out.Data<float>(), like);
      case DataType::kDouble:
        return SumIntoBroadcastSource(grad.Data<double>(), grad.shape(), out.Data<double>(), like);
      case DataType::kInt32:
        return SumIntoBroadcastSource(grad.Data<int32_t>(), grad.shape(), out.Data<int32_t>(), like);
      case DataType::kInt64:
        return SumIntoBroadcastSource(grad.Data<int64_t>(), grad.shape(), out.Data<int64_t>(), like);
      default:
        Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(grad.type()),
             " is not supported");
    }
  }
};

}  // namespace

void RegisterReduceToShapeKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "ReduceToShapeOf";
  def.domain = "ai.tessera";
  def.since_version = 1;
  def.input_types = {{0, {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64}}};
  registry.Register<ReduceToShapeOf>(std::move(def));
}

}  // namespace tessera::cpu
