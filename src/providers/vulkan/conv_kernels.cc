// Convolutions (Conv and ai.tessera::FusedConv: implicit matrix product, or one invocation per output for depthwise
// convolutions), pooling, and Resize of the two spatial axes. 1-D windows run as 2-D ones of height 1.
#include <algorithm>
#include <cmath>

#include "tessera/ep/broadcast.h"
#include "tessera/ep/fused_activation.h"
#include "tessera/ep/window_geometry.h"
#include "tessera/status.h"
#include "vulkan_kernels.h"

namespace tessera::vulkan_ep {

namespace {

struct ConvPush {
  uint64_t x, w, bias, y, residual;
  uint32_t N, C, H, W, K, OH, OW;
  uint32_t KH, KW, SH, SW;
  int32_t PH, PW;
  uint32_t DH, DW;
  uint32_t groups, act;
  float act_a, act_b;
  uint32_t flags;
  uint32_t splits;
};
static_assert(sizeof(ConvPush) <= kPushConstantBytes);

struct ConvReducePush {
  uint64_t partial, bias, residual, y;
  uint32_t N, K, pixels, splits, act;
  float act_a, act_b;
  uint32_t flags;
};


// The spatial dims of a 1-D or 2-D window as (height, width), height 1 for 1-D.
std::pair<int64_t, int64_t> HeightWidth(const std::vector<int64_t>& v, int64_t one = 1) {
  return v.size() == 1 ? std::pair<int64_t, int64_t>{one, v[0]} : std::pair<int64_t, int64_t>{v[0], v[1]};
}

struct Window2d {
  uint32_t KH, KW, SH, SW, DH, DW;
  int32_t PH, PW;
  uint32_t OH, OW;
};

Window2d ToWindow2d(const KernelContext& ctx, const WindowGeometry& g) {
  Window2d w{};
  auto [kh, kw] = HeightWidth(g.kernel);
  auto [sh, sw] = HeightWidth(g.strides);
  auto [dh, dw] = HeightWidth(g.dilations);
  auto [ph, pw] = HeightWidth(g.pad_begin, 0);
  auto [oh, ow] = HeightWidth(g.output);
  w.KH = U32(ctx, kh);
  w.KW = U32(ctx, kw);
  w.SH = U32(ctx, sh);
  w.SW = U32(ctx, sw);
  w.DH = U32(ctx, dh);
  w.DW = U32(ctx, dw);
  w.PH = static_cast<int32_t>(ph);
  w.PW = static_cast<int32_t>(pw);
  w.OH = U32(ctx, oh);
  w.OW = U32(ctx, ow);
  return w;
}

// Conv(X, W, B?) and FusedConv(X, W, B?, Z?) with `activation`.
class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(const KernelInfo& info)
      : attributes_(ReadWindowAttributes(info.node())),
        group_(info.node().GetInt("group", 1)),
        fused_(info.node().domain == "ai.tessera") {
    if (fused_) activation_ = ReadFusedActivation(info.node());
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    const Tensor* b = ctx.OptionalInput(2);
    const Tensor* z = fused_ ? ctx.OptionalInput(3) : nullptr;
    const size_t rank = x.shape().rank();
    if ((rank != 3 && rank != 4) || w.shape().rank() != rank)
      Fail(ErrorCode::kNotImplemented, node, ": the Vulkan EP runs 1-D and 2-D convolutions, got X ",
           x.shape().ToString(), " and W ", w.shape().ToString());
    const int64_t N = x.shape()[0], C = x.shape()[1], K = w.shape()[0];
    if (group_ <= 0 || C % group_ != 0 || K % group_ != 0 || w.shape()[1] * group_ != C)
      Fail(ErrorCode::kInvalidArgument, node, ": X ", x.shape().ToString(), " and W ", w.shape().ToString(),
           " do not fit group = ", group_);
    if (b != nullptr && b->NumElements() != K)
      Fail(ErrorCode::kInvalidArgument, node, ": B must hold ", K, " values, got ", b->shape().ToString());
    const std::vector<int64_t> spatial(x.shape().dims().begin() + 2, x.shape().dims().end());
    const std::vector<int64_t> kernel(w.shape().dims().begin() + 2, w.shape().dims().end());
    const WindowGeometry g = ResolveWindow(attributes_, spatial, kernel, node);
    const Window2d win = ToWindow2d(ctx, g);
    std::vector<int64_t> out_dims = {N, K};
    out_dims.insert(out_dims.end(), g.output.begin(), g.output.end());
    Tensor& y = ctx.Output(0, x.type(), Shape(out_dims));
    if (y.NumElements() == 0) return;
    auto [H, W] = HeightWidth(spatial);

    ConvPush push{};
    push.x = Address(ctx, x, "X");
    push.w = Address(ctx, w, "W");
    push.y = Address(ctx, y, "Y");
    push.bias = b != nullptr ? Address(ctx, *b, "B") : push.y;
    push.residual = push.y;
    push.N = U32(ctx, N);
    push.C = U32(ctx, C);
    push.H = U32(ctx, H);
    push.W = U32(ctx, W);
    push.K = U32(ctx, K);
    push.OH = win.OH;
    push.OW = win.OW;
    push.KH = win.KH;
    push.KW = win.KW;
    push.SH = win.SH;
    push.SW = win.SW;
    push.PH = win.PH;
    push.PW = win.PW;
    push.DH = win.DH;
    push.DW = win.DW;
    push.groups = U32(ctx, group_);
    push.flags = b != nullptr ? 1u : 0u;
    // Pointwise (1 x 1, stride 1, no padding): the implicit product reads X directly (conv2d.comp, flags bit 4).
    if (win.KH == 1 && win.KW == 1 && win.SH == 1 && win.SW == 1 && win.PH == 0 && win.PW == 0 &&
        win.OH == static_cast<uint32_t>(H) && win.OW == static_cast<uint32_t>(W))
      push.flags |= 4u;
    push.splits = 1;
    // A residual of exactly Y's shape is added in the epilogue; one that broadcasts is added afterwards, and the
    // activation then runs after it.
    const bool residual_in_epilogue = z != nullptr && z->shape() == y.shape();
    const bool separate_residual = z != nullptr && !residual_in_epilogue;
    if (residual_in_epilogue) {
      push.residual = Address(ctx, *z, "Z");
      push.flags |= 2u;
    }
    if (!separate_residual) {
      push.act = static_cast<uint32_t>(ShaderActivation(activation_));
      push.act_a = activation_.alpha;
      push.act_b = activation_.beta;
    }
    VulkanStream& stream = StreamOf(ctx);
    const char* suffix = FloatSuffix(ctx, x.type());
    const int64_t Cg = C / group_, Kg = K / group_;
    if (Cg == 1 && group_ > 1) {  // depthwise (with a channel multiplier Kg)
      DispatchLinear(stream, std::string("depthwise_conv2d") + suffix, &push, sizeof(push), y.NumElements());
    } else {
      const uint64_t cols = static_cast<uint64_t>(N) * win.OH * win.OW;
      const uint32_t gx = U32(ctx, (cols + 63) / 64), gy = U32(ctx, (Kg + 63) / 64);
      const uint64_t depth = static_cast<uint64_t>(Cg) * win.KH * win.KW;
      push.splits = SplitsFor(uint64_t{gx} * gy * push.groups, depth);
      const std::string shader = ProductShader(stream, "conv2d", suffix);
      if (push.splits == 1) {
        stream.Dispatch(shader, &push, sizeof(push), gx, gy, push.groups);
      } else {  // split-K: partial sums, then conv_reduce applies the epilogue
        Tensor partial = Tensor::Allocate(DataType::kFloat, Shape({static_cast<int64_t>(push.splits * K * cols)}),
                                          ctx.allocator());
        ConvPush first = push;
        first.y = Address(ctx, partial, "split-K partial sums");
        stream.Dispatch(shader, &first, sizeof(first), gx, gy, push.groups * push.splits);
        ConvReducePush reduce{first.y, push.bias, push.residual, push.y,    push.N,     push.K,   win.OH * win.OW,
                              push.splits, push.act, push.act_a,  push.act_b, push.flags};
        DispatchLinear(stream, std::string("conv_reduce") + suffix, &reduce, sizeof(reduce), y.NumElements());
        stream.KeepAlive(partial.buffer());
      }
    }
    if (separate_residual) {
      BroadcastShapes(node, y.shape(), z->shape());
      RecordResidual(ctx, y, *z);
    }
  }

 private:
  // y = act(y + z) for a z that broadcasts to y's shape: y + z with the binary shader, then the activation in place.
  void RecordResidual(const KernelContext& ctx, Tensor& y, const Tensor& z) const {
    struct BinaryPush {
      uint64_t a, b, c;
      uint32_t n, op, rank;
      uint32_t dims[5], a_strides[5], b_strides[5];
    } push{};
    const std::vector<int64_t>& yd = y.shape().dims();
    std::vector<int64_t> zd(yd.size() - z.shape().rank(), 1);
    zd.insert(zd.end(), z.shape().dims().begin(), z.shape().dims().end());
    if (yd.size() > 5)
      Fail(ErrorCode::kNotImplemented, ctx.node(), ": residual of rank ", yd.size(), " on the Vulkan EP");
    int64_t ys = 1, zs = 1;
    push.rank = static_cast<uint32_t>(yd.size());
    for (size_t i = yd.size(); i-- > 0;) {
      push.dims[i] = U32(ctx, yd[i]);
      push.a_strides[i] = U32(ctx, ys);
      push.b_strides[i] = zd[i] == 1 ? 0 : U32(ctx, zs);
      ys *= yd[i];
      zs *= zd[i];
    }
    push.a = push.c = Address(ctx, y, "Y");
    push.b = Address(ctx, z, "Z");
    push.n = U32(ctx, y.NumElements());
    push.op = 0;  // add
    const char* suffix = FloatSuffix(ctx, y.type());
    VulkanStream& stream = StreamOf(ctx);
    DispatchLinear(stream, std::string("binary") + suffix, &push, sizeof(push), y.NumElements());
    struct {
      uint64_t x, y;
      uint32_t n, op;
      float a, b;
    } act{push.c, push.c, push.n, static_cast<uint32_t>(ShaderActivation(activation_)), activation_.alpha,
          activation_.beta};
    if (act.op != 0) DispatchLinear(stream, std::string("unary") + suffix, &act, sizeof(act), y.NumElements());
  }

  WindowAttributes attributes_;
  int64_t group_;
  bool fused_;
  FusedActivation activation_;
};

struct ConvTransposePush {
  uint64_t x, w, bias, y;
  uint32_t N, C, H, W, K, OH, OW;
  uint32_t KH, KW, SH, SW;
  int32_t PH, PW;
  uint32_t DH, DW;
  uint32_t groups, flags;
};

// ConvTranspose with explicit pads (or auto_pad VALID), strides, dilations, output_padding and groups, 1-D or 2-D.
// output_shape and auto_pad SAME_* are left to the CPU (vulkan_ep.cc, AttributesSupported).
class ConvTransposeKernel : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelInfo& info) {
    const Node& node = info.node();
    group_ = node.GetInt("group", 1);
    strides_ = node.GetInts("strides");
    dilations_ = node.GetInts("dilations");
    pads_ = node.GetInts("pads");
    output_padding_ = node.GetInts("output_padding");
    const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
    if ((auto_pad != "NOTSET" && auto_pad != "VALID") || node.HasAttribute("output_shape"))
      Fail(ErrorCode::kNotImplemented, node, ": the Vulkan EP's ConvTranspose takes explicit pads (no output_shape, ",
           "auto_pad NOTSET or VALID)");
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    const Tensor* b = ctx.OptionalInput(2);
    const size_t rank = x.shape().rank();
    if ((rank != 3 && rank != 4) || w.shape().rank() != rank)
      Fail(ErrorCode::kNotImplemented, node, ": the Vulkan EP runs 1-D and 2-D transposed convolutions, got X ",
           x.shape().ToString(), " and W ", w.shape().ToString());
    const size_t spatial = rank - 2;
    const int64_t N = x.shape()[0], C = x.shape()[1], K = w.shape()[1] * group_;
    if (group_ <= 0 || w.shape()[0] != C || C % group_ != 0)
      Fail(ErrorCode::kInvalidArgument, node, ": X ", x.shape().ToString(), " and W ", w.shape().ToString(),
           " do not fit group = ", group_);
    if (b != nullptr && b->NumElements() != K)
      Fail(ErrorCode::kInvalidArgument, node, ": B must hold ", K, " values, got ", b->shape().ToString());
    auto value = [&](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
      if (v.empty()) return fallback;
      if (v.size() <= i) Fail(ErrorCode::kInvalidArgument, node, ": attribute of ", v.size(), " values for ", spatial, " axes");
      return v[i];
    };
    std::vector<int64_t> in(spatial), kernel(spatial), stride(spatial), dilation(spatial), pad_begin(spatial), out(spatial);
    for (size_t a = 0; a < spatial; ++a) {
      in[a] = x.shape()[2 + a];
      kernel[a] = w.shape()[2 + a];
      stride[a] = value(strides_, a, 1);
      dilation[a] = value(dilations_, a, 1);
      pad_begin[a] = value(pads_, a, 0);
      const int64_t pad_end = value(pads_, a + spatial, 0);
      out[a] = stride[a] * (in[a] - 1) + value(output_padding_, a, 0) + (kernel[a] - 1) * dilation[a] + 1 -
               pad_begin[a] - pad_end;
      if (out[a] < 0) Fail(ErrorCode::kInvalidArgument, node, ": negative output size on spatial axis ", a);
    }
    std::vector<int64_t> out_dims = {N, K};
    out_dims.insert(out_dims.end(), out.begin(), out.end());
    Tensor& y = ctx.Output(0, x.type(), Shape(out_dims));
    if (y.NumElements() == 0) return;
    auto [H, W] = HeightWidth(in);
    auto [KH, KW] = HeightWidth(kernel);
    auto [SH, SW] = HeightWidth(stride);
    auto [DH, DW] = HeightWidth(dilation);
    auto [PH, PW] = HeightWidth(pad_begin, 0);
    auto [OH, OW] = HeightWidth(out);
    ConvTransposePush push{Address(ctx, x, "X"), Address(ctx, w, "W"), 0, Address(ctx, y, "Y"), U32(ctx, N),
                           U32(ctx, C), U32(ctx, H), U32(ctx, W), U32(ctx, K), U32(ctx, OH), U32(ctx, OW),
                           U32(ctx, KH), U32(ctx, KW), U32(ctx, SH), U32(ctx, SW), static_cast<int32_t>(PH),
                           static_cast<int32_t>(PW), U32(ctx, DH), U32(ctx, DW), U32(ctx, group_), b != nullptr ? 1u : 0u};
    push.bias = b != nullptr ? Address(ctx, *b, "B") : push.y;
    DispatchLinear(StreamOf(ctx), std::string("conv_transpose2d") + FloatSuffix(ctx, x.type()), &push, sizeof(push),
                   y.NumElements());
  }

 private:
  int64_t group_ = 1;
  std::vector<int64_t> strides_, dilations_, pads_, output_padding_;
};

struct PoolPush {
  uint64_t x, y;
  uint32_t NC, H, W, OH, OW;
  uint32_t KH, KW, SH, SW;
  int32_t PH, PW;
  uint32_t DH, DW;
  uint32_t mode, count_include_pad;
};

struct GlobalPoolPush {
  uint64_t x, y;
  uint32_t planes, spatial, mode;
};

// MaxPool / AveragePool (windows from attributes; shaders/pool2d.comp, one invocation per output) and
// GlobalAveragePool / GlobalMaxPool (the whole plane; shaders/global_pool.comp, one workgroup per plane).
class PoolKernel : public Kernel {
 public:
  PoolKernel(const KernelInfo& info, bool max, bool global)
      : max_(max), global_(global), count_include_pad_(info.node().GetInt("count_include_pad", 0) != 0) {
    if (!global_) attributes_ = ReadWindowAttributes(info.node());
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const size_t rank = x.shape().rank();
    if (rank != 3 && rank != 4)
      Fail(ErrorCode::kNotImplemented, node, ": the Vulkan EP pools 1-D and 2-D inputs, got ", x.shape().ToString());
    const std::vector<int64_t> spatial(x.shape().dims().begin() + 2, x.shape().dims().end());
    WindowAttributes attributes = attributes_;
    if (global_) attributes.kernel_shape = spatial;
    const WindowGeometry g = ResolveWindow(attributes, spatial, attributes.kernel_shape, node);
    const Window2d win = ToWindow2d(ctx, g);
    std::vector<int64_t> out_dims = {x.shape()[0], x.shape()[1]};
    out_dims.insert(out_dims.end(), g.output.begin(), g.output.end());
    Tensor& y = ctx.Output(0, x.type(), Shape(out_dims));
    if (y.NumElements() == 0) return;
    auto [H, W] = HeightWidth(spatial);
    if (global_) {  // one workgroup per plane (shaders/global_pool.comp)
      GlobalPoolPush push{Address(ctx, x, "X"), Address(ctx, y, "Y"), U32(ctx, x.shape()[0] * x.shape()[1]),
                          U32(ctx, H * W), max_ ? 0u : 1u};
      DispatchRows(StreamOf(ctx), std::string("global_pool") + FloatSuffix(ctx, x.type()), &push, sizeof(push),
                   x.shape()[0] * x.shape()[1]);
      return;
    }
    PoolPush push{Address(ctx, x, "X"), Address(ctx, y, "Y"), U32(ctx, x.shape()[0] * x.shape()[1]), U32(ctx, H),
                  U32(ctx, W), win.OH, win.OW, win.KH, win.KW, win.SH, win.SW, win.PH, win.PW, win.DH, win.DW,
                  max_ ? 0u : 1u, count_include_pad_ ? 1u : 0u};
    DispatchLinear(StreamOf(ctx), std::string("pool2d") + FloatSuffix(ctx, x.type()), &push, sizeof(push),
                   y.NumElements());
  }

 private:
  bool max_, global_, count_include_pad_;
  WindowAttributes attributes_;
};

struct ResizePush {
  uint64_t x, y;
  uint32_t NC, H, W, OH, OW;
  float scale_h, scale_w;
  uint32_t mode, coord, nearest;
  float length_h, length_w;
};

// Resize of a 4-D tensor's last two axes (scales of N and C must be 1): nearest or linear.
class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(const KernelInfo& info) {
    const Node& node = info.node();
    const std::string mode = node.GetString("mode", "nearest");
    if (mode != "nearest" && mode != "linear")
      Fail(ErrorCode::kNotImplemented, node, ": the Vulkan EP resizes with mode nearest or linear, not ", mode);
    mode_ = mode == "linear" ? 1 : 0;
    const std::string coord = node.GetString("coordinate_transformation_mode", node.opset >= 11 ? "half_pixel" : "asymmetric");
    const std::vector<std::string> coords = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                             "tf_half_pixel_for_nearest"};
    auto it = std::find(coords.begin(), coords.end(), coord);
    if (it == coords.end())
      Fail(ErrorCode::kNotImplemented, node, ": coordinate_transformation_mode ", coord, " on the Vulkan EP");
    coord_ = static_cast<uint32_t>(it - coords.begin());
    const std::string nearest = node.GetString("nearest_mode", "round_prefer_floor");
    const std::vector<std::string> nearests = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    auto n = std::find(nearests.begin(), nearests.end(), nearest);
    if (n == nearests.end()) Fail(ErrorCode::kInvalidModel, node, ": unknown nearest_mode ", nearest);
    nearest_ = static_cast<uint32_t>(n - nearests.begin());
    opset10_ = node.opset < 11;
  }

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    if (x.shape().rank() != 4)
      Fail(ErrorCode::kNotImplemented, node, ": the Vulkan EP resizes 4-D tensors, got ", x.shape().ToString());
    const Tensor* scales = ctx.OptionalInput(opset10_ ? 1 : 2);
    const Tensor* sizes = opset10_ ? nullptr : ctx.OptionalInput(3);
    std::vector<int64_t> out(4);
    std::vector<float> scale(4, 1.0f), length(4);
    if (sizes != nullptr && sizes->NumElements() > 0) {
      if (sizes->NumElements() != 4 || sizes->type() != DataType::kInt64)
        Fail(ErrorCode::kInvalidArgument, node, ": sizes must be 4 int64 values, got ", sizes->Describe());
      for (int i = 0; i < 4; ++i) {
        out[i] = sizes->Data<int64_t>()[i];
        scale[i] = x.shape()[i] == 0 ? 1.0f : static_cast<float>(out[i]) / static_cast<float>(x.shape()[i]);
        length[i] = static_cast<float>(out[i]);
      }
    } else if (scales != nullptr && scales->NumElements() == 4 &&
               (scales->type() == DataType::kFloat || scales->type() == DataType::kFloat16)) {
      for (int i = 0; i < 4; ++i) {
        scale[i] = scales->type() == DataType::kFloat ? scales->Data<float>()[i] : ToFloat(scales->Data<Float16>()[i]);
        out[i] = static_cast<int64_t>(std::floor(static_cast<double>(x.shape()[i]) * scale[i]));
        length[i] = static_cast<float>(x.shape()[i]) * scale[i];
      }
    } else {
      Fail(ErrorCode::kInvalidArgument, node, ": needs 4 float scales or 4 int64 sizes");
    }
    if (out[0] != x.shape()[0] || out[1] != x.shape()[1])
      Fail(ErrorCode::kNotImplemented, node, ": the Vulkan EP resizes the last two axes only (output ",
           Shape(out).ToString(), " from ", x.shape().ToString(), ")");
    Tensor& y = ctx.Output(0, x.type(), Shape(out));
    if (y.NumElements() == 0) return;
    ResizePush push{Address(ctx, x, "X"), Address(ctx, y, "Y"), U32(ctx, out[0] * out[1]), U32(ctx, x.shape()[2]),
                    U32(ctx, x.shape()[3]), U32(ctx, out[2]), U32(ctx, out[3]), scale[2], scale[3], mode_, coord_,
                    nearest_, length[2], length[3]};
    DispatchLinear(StreamOf(ctx), std::string("resize2d") + FloatSuffix(ctx, x.type()), &push, sizeof(push),
                   y.NumElements());
  }

 private:
  uint32_t mode_ = 0, coord_ = 0, nearest_ = 0;
  bool opset10_ = false;
};

}  // namespace

void RegisterConvKernels(KernelRegistry& registry, const PhysicalDeviceInfo& device) {
  const std::vector<DataType> floats = FloatTypes(device);
  registry.Register<ConvKernel>(Def("Conv", "", 1, kLatestOnnxOpset, {{0, floats}, {1, floats}, {2, floats}}));
  registry.Register<ConvKernel>(Def("FusedConv", "ai.tessera", 1, INT_MAX, {{0, floats}, {1, floats}, {2, floats}}));
  registry.Register<ConvTransposeKernel>(
      Def("ConvTranspose", "", 1, kLatestOnnxOpset, {{0, floats}, {1, floats}, {2, floats}}));
  auto pool = [&](const char* op, bool max, bool global, int since) {
    registry.Register(Def(op, "", since, kLatestOnnxOpset, {{0, floats}}), [max, global](const KernelInfo& info) {
      return std::make_unique<PoolKernel>(info, max, global);
    });
  };
  pool("MaxPool", true, false, 1);
  pool("AveragePool", false, false, 1);
  pool("GlobalAveragePool", false, true, 1);
  pool("GlobalMaxPool", true, true, 1);
  KernelDef resize = Def("Resize", "", 10, kLatestOnnxOpset, {{0, floats}});
  resize.host_inputs = {1, 2, 3};
  registry.Register<ResizeKernel>(resize);
}

}  // namespace tessera::vulkan_ep
