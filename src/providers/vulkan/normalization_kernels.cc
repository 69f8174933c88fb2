// Softmax / LogSoftmax (one workgroup per row) and LayerNormalization (one workgroup per row).
#include "tessera/status.h"
#include "vulkan_kernels.h"

namespace tessera::vulkan_ep {

namespace {

int64_t NormalizeAxis(const Node& node, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) Fail(ErrorCode::kInvalidArgument, node, ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + r : axis;
}

struct SoftmaxPush {
  uint64_t x, y;
  uint32_t rows, D, inner, log_softmax;
};

class SoftmaxKernel : public Kernel {
 public:
  SoftmaxKernel(const KernelInfo& info, bool log)
      : log_(log), axis_(info.node().GetInt("axis", info.node().opset >= 13 ? -1 : 1)),
        legacy_(info.node().opset < 13) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    if (x.NumElements() == 0) return;
    const std::vector<int64_t>& d = x.shape().dims();
    const int64_t axis = NormalizeAxis(ctx.node(), axis_, std::max<size_t>(d.size(), 1));
    int64_t outer = 1, D = 1, inner = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i) {
      if (i < axis) outer *= d[i];
      else if (i == axis || legacy_) D *= d[i];  // before opset 13: the input flattened to 2-D at `axis`
      else inner *= d[i];
    }
    SoftmaxPush push{Address(ctx, x, "input"), Address(ctx, y, "output"), U32(ctx, outer * inner), U32(ctx, D),
                     U32(ctx, inner), log_ ? 1u : 0u};
    DispatchRows(StreamOf(ctx), std::string("softmax") + FloatSuffix(ctx, x.type()), &push, sizeof(push),
                 outer * inner);
  }

 private:
  bool log_;
  int64_t axis_;
  bool legacy_;
};

struct LayerNormPush {
  uint64_t x, scale, bias, y, mean, inv_std;
  uint32_t rows, D;
  float epsilon;
  uint32_t flags;
};

class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", -1)), epsilon_(info.node().GetFloat("epsilon", 1e-5f)) {
    if (info.node().GetInt("stash_type", 1) != 1)
      Fail(ErrorCode::kNotImplemented, info.node(), ": stash_type other than float on the Vulkan EP");
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& scale = ctx.Input(1);
    const Tensor* bias = ctx.OptionalInput(2);
    const std::vector<int64_t>& d = x.shape().dims();
    const int64_t axis = NormalizeAxis(node, axis_, d.size());
    int64_t rows = 1, D = 1;
    std::vector<int64_t> stats_dims;
    for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i) {
      if (i < axis) {
        rows *= d[i];
        stats_dims.push_back(d[i]);
      } else {
        D *= d[i];
        stats_dims.push_back(1);
      }
    }
    if (scale.NumElements() != D || (bias != nullptr && bias->NumElements() != D))
      Fail(ErrorCode::kNotImplemented, node, ": the Vulkan EP takes Scale and B of the normalized shape (", D,
           " values), got ", scale.shape().ToString(), bias != nullptr ? " and " + bias->shape().ToString() : "");
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    LayerNormPush push{Address(ctx, x, "X"), Address(ctx, scale, "Scale"), 0, Address(ctx, y, "Y"), 0, 0,
                       U32(ctx, rows), U32(ctx, D), epsilon_, 0};
    push.bias = push.scale;
    push.mean = push.inv_std = push.y;
    if (bias != nullptr) {
      push.bias = Address(ctx, *bias, "B");
      push.flags |= 1u;
    }
    const bool stats = node.outputs.size() > 1 && !node.outputs[1].empty();
    if (stats) {
      Tensor& mean = ctx.Output(1, DataType::kFloat, Shape(stats_dims));
      Tensor& inv_std = ctx.Output(2, DataType::kFloat, Shape(stats_dims));
      push.mean = Address(ctx, mean, "Mean");
      push.inv_std = Address(ctx, inv_std, "InvStdDev");
      push.flags |= 2u;
    }
    if (rows == 0 || D == 0) return;
    DispatchRows(StreamOf(ctx), std::string("layer_norm") + FloatSuffix(ctx, x.type()), &push, sizeof(push), rows);
  }

 private:
  int64_t axis_;
  float epsilon_;
};

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device) {
  const std::vector<DataType> floats = FloatTypes(device);
  registry.Register(Def("Softmax", "", 1, kLatestOnnxOpset, {{0, floats}}),
                    [](const KernelInfo& info) { return std::make_unique<SoftmaxKernel>(info, false); });
  registry.Register(Def("LogSoftmax", "", 1, kLatestOnnxOpset, {{0, floats}}),
                    [](const KernelInfo& info) { return std::make_unique<SoftmaxKernel>(info, true); });
  registry.Register<LayerNormKernel>(Def("LayerNormalization", "", 17, kLatestOnnxOpset, {{0, floats}, {1, floats}}));
}

}  // namespace tessera::vulkan_ep
