// MaxPool, AveragePool (1-D and 2-D windows) and GlobalAveragePool; and their ai.tessera Nchwc* forms for NHWC
// tensors [N, 1, H, W, C] (2-D windows; the nchwc_layout pass writes them with channel block 0).
#include <climits>

#include "providers/cpu/common/window_geometry.h"
#include "providers/cuda/kernels/cuda_kernels.h"
#include "providers/cuda/kernels/kernel_utils.h"

namespace tessera::cuda {

namespace {

// The CUDA EP's blocked tensors are NHWC: [N, 1, H, W, C].
void RequireNhwc(const KernelContext& ctx, const Shape& shape) {
  if (shape.rank() != 5 || shape[1] != 1)
    Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": the CUDA kernel takes NHWC tensors [N, 1, H, W, C], not ",
         shape.ToString());
}

class PoolKernel : public Kernel {
 public:
  PoolKernel(const KernelInfo& info, bool max)
      : ep_(CudaEpOf(info)),
        attributes_(cpu::ReadWindowAttributes(info.node())),
        op_(OpFor(info.node(), max)),
        channels_last_(info.node().domain == "ai.tessera") {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    if (channels_last_) RequireNhwc(ctx, shape);
    if (!channels_last_ && shape.rank() != 3 && shape.rank() != 4)
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": the CUDA kernel pools 1-D and 2-D inputs, not ",
           shape.ToString());
    const std::vector<int64_t> spatial = channels_last_ ? std::vector<int64_t>{shape[2], shape[3]}
                                                        : std::vector<int64_t>(shape.dims().begin() + 2, shape.dims().end());
    const cpu::WindowGeometry window = cpu::ResolveWindow(attributes_, spatial, attributes_.kernel_shape, ctx.node());
    std::vector<int64_t> y_dims = {shape[0], shape[1]};
    y_dims.insert(y_dims.end(), window.output.begin(), window.output.end());
    if (channels_last_) y_dims.push_back(shape[4]);
    Tensor& y = ctx.Output(0, x.type(), Shape(y_dims));
    if (y.NumElements() == 0) return;
    launch::Pool2dGeometry geometry = Geometry(shape, window);
    if (channels_last_) {
      geometry.planes = shape[0];
      geometry.channels = shape[4];
    }
    CheckLaunch(ctx,
                launch::Pool2d(op_, FloatElementType(ctx, x.type()), x.raw_data(), y.raw_data(), geometry,
                               StreamOf(ctx)),
                "pooling launch");
  }

 private:
  static launch::PoolOp OpFor(const Node& node, bool max) {
    if (max) return launch::PoolOp::kMax;
    return node.GetInt("count_include_pad", 0) ? launch::PoolOp::kAverageIncludePad
                                               : launch::PoolOp::kAverageExcludePad;
  }

  // 1-D windows become 2-D windows of height 1.
  static launch::Pool2dGeometry Geometry(const Shape& x, const cpu::WindowGeometry& w) {
    launch::Pool2dGeometry g;
    const bool one_d = w.rank() == 1;
    const size_t last = w.rank() - 1;
    g.planes = x[0] * x[1];
    g.in_h = one_d ? 1 : w.input[0];
    g.in_w = w.input[last];
    g.out_h = one_d ? 1 : w.output[0];
    g.out_w = w.output[last];
    g.kernel_h = one_d ? 1 : w.kernel[0];
    g.kernel_w = w.kernel[last];
    g.stride_h = one_d ? 1 : w.strides[0];
    g.stride_w = w.strides[last];
    g.dilation_h = one_d ? 1 : w.dilations[0];
    g.dilation_w = w.dilations[last];
    g.pad_top = one_d ? 0 : w.pad_begin[0];
    g.pad_left = w.pad_begin[last];
    g.pad_bottom = one_d ? 0 : w.pad_end[0];
    g.pad_right = w.pad_end[last];
    return g;
  }

  const CudaExecutionProvider& ep_;
  cpu::WindowAttributes attributes_;
  launch::PoolOp op_;
  bool channels_last_;  // NchwcMaxPool / NchwcAveragePool
};

class GlobalAveragePoolKernel : public Kernel {
 public:
  explicit GlobalAveragePoolKernel(const KernelInfo& info)
      : ep_(CudaEpOf(info)), channels_last_(info.node().domain == "ai.tessera") {}

  void Compute(KernelContext& ctx) const override {
    DeviceGuard guard(ep_.ordinal());
    const Tensor& x = ctx.Input(0);
    const Shape& shape = x.shape();
    if (channels_last_) {
      RequireNhwc(ctx, shape);
      Tensor& y = ctx.Output(0, x.type(), Shape{shape[0], 1, 1, 1, shape[4]});
      const int64_t spatial = shape[2] * shape[3];
      if (y.NumElements() == 0 || spatial == 0) return;
      Tensor partial = Tensor::Allocate(
          DataType::kFloat, Shape{launch::GlobalAveragePoolChannelsLastScratch(shape[0], spatial, shape[4])},
          ctx.allocator());
      CheckLaunch(ctx,
                  launch::GlobalAveragePoolChannelsLast(FloatElementType(ctx, x.type()), x.raw_data(), y.raw_data(),
                                                        shape[0], spatial, shape[4], static_cast<float*>(partial.raw_data()),
                                                        StreamOf(ctx)),
                  "NchwcGlobalAveragePool launch");
      return;
    }
    if (shape.rank() < 3)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X ", shape.ToString(), " needs rank >= 3");
    std::vector<int64_t> y_dims(shape.rank(), 1);
    y_dims[0] = shape[0];
    y_dims[1] = shape[1];
    Tensor& y = ctx.Output(0, x.type(), Shape(y_dims));
    const int64_t spatial = shape.SizeFrom(2);
    if (y.NumElements() == 0 || spatial == 0) return;
    CheckLaunch(ctx,
                launch::GlobalAveragePool(FloatElementType(ctx, x.type()), x.raw_data(), y.raw_data(),
                                          shape[0] * shape[1], spatial, StreamOf(ctx)),
                "GlobalAveragePool launch");
  }

 private:
  const CudaExecutionProvider& ep_;
  bool channels_last_;  // NchwcGlobalAveragePool
};

}  // namespace

void RegisterPoolKernels(KernelRegistry& registry) {
  registry.Register(MakeDef("MaxPool", 1, INT_MAX, FloatTypes()),
                    [](const KernelInfo& info) { return std::make_unique<PoolKernel>(info, true); });
  registry.Register(MakeDef("AveragePool", 1, INT_MAX, FloatTypes()),
                    [](const KernelInfo& info) { return std::make_unique<PoolKernel>(info, false); });
  registry.Register<GlobalAveragePoolKernel>(MakeDef("GlobalAveragePool", 1, INT_MAX, FloatTypes()));
  const auto nchwc = [](const char* op) {
    KernelDef def = MakeDef(op, 1, INT_MAX, FloatTypes());
    def.domain = "ai.tessera";
    return def;
  };
  registry.Register(nchwc("NchwcMaxPool"),
                    [](const KernelInfo& info) { return std::make_unique<PoolKernel>(info, true); });
  registry.Register(nchwc("NchwcAveragePool"),
                    [](const KernelInfo& info) { return std::make_unique<PoolKernel>(info, false); });
  registry.Register<GlobalAveragePoolKernel>(nchwc("NchwcGlobalAveragePool"));
}

}  // namespace tessera::cuda
