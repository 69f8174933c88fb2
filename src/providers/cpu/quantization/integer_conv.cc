// ConvInteger and QLinearConv (opset 10): N-D grouped convolution of 8-bit tensors with int32
// accumulation, as im2col of (x - x_zero_point) into int16 followed by an int16 GEMM with the weights
// minus their (per-tensor or per-output-channel) zero points. Padding reads as x_zero_point, so it adds 0.
//
// Why not oneDNN: its int8 convolutions take signed weights only and no weight zero points, while
// ONNX allows uint8 weights and per-channel weight zero points; one exact integer path serves all.
#include <array>

#include "providers/cpu/common/window_geometry.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/quantization/quantize_common.h"

namespace tessera::cpu {
namespace {

struct IntConvShapes {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  int64_t channels_per_group = 0, outputs_per_group = 0;
  int64_t depth = 0;  // GEMM reduction length: channels_per_group * kernel size
  WindowGeometry window;
  Shape output;
};

IntConvShapes ResolveShapes(const Node& node, const WindowAttributes& attrs, int64_t group, const Shape& x,
                            const Shape& w) {
  if (x.rank() < 3 || w.rank() != x.rank())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": x ", x.ToString(), " and w ", w.ToString(),
         " must have the same rank >= 3 (N, C, spatial...)");
  IntConvShapes s;
  s.batch = x[0];
  s.in_channels = x[1];
  s.out_channels = w[0];
  s.group = group;
  if (group < 1 || s.in_channels != w[1] * group || s.out_channels % group != 0)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": channel mismatch: x ", x.ToString(), ", w ", w.ToString(),
         ", group ", group, " (need C == w[1] * group and w[0] divisible by group)");
  const std::vector<int64_t> spatial(x.dims().begin() + 2, x.dims().end()), kernel(w.dims().begin() + 2, w.dims().end());
  if (!attrs.kernel_shape.empty() && attrs.kernel_shape != kernel)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": kernel_shape ", Shape(attrs.kernel_shape).ToString(),
         " does not match w ", w.ToString());
  s.window = ResolveWindow(attrs, spatial, kernel, node);
  s.channels_per_group = s.in_channels / group;
  s.outputs_per_group = s.out_channels / group;
  s.depth = s.channels_per_group * s.window.KernelSize();
  std::vector<int64_t> out{s.batch, s.out_channels};
  out.insert(out.end(), s.window.output.begin(), s.window.output.end());
  s.output = Shape(std::move(out));
  return s;
}

// Precomputed im2col addressing. coords[d][t * output[d] + o]: the input coordinate along spatial dim d
// read by kernel tap t at output position o, or -1 in the padding. line_stride[d]: input elements
// between consecutive coordinates along d, counted in rows of the last spatial dim.
struct Im2ColPlan {
  std::vector<std::vector<int64_t>> coords;
  std::vector<int64_t> line_stride;
};

Im2ColPlan PlanIm2Col(const WindowGeometry& g) {
  Im2ColPlan plan;
  plan.coords.resize(g.rank());
  plan.line_stride.assign(g.rank(), 1);
  for (size_t d = g.rank() - 1; d-- > 0;) plan.line_stride[d] = plan.line_stride[d + 1] * (d + 2 < g.rank() ? g.input[d + 1] : 1);
  for (size_t d = 0; d < g.rank(); ++d) {
    plan.coords[d].resize(static_cast<size_t>(g.kernel[d] * g.output[d]));
    for (int64_t t = 0; t < g.kernel[d]; ++t)
      for (int64_t o = 0; o < g.output[d]; ++o) {
        const int64_t pos = o * g.strides[d] - g.pad_begin[d] + t * g.dilations[d];
        plan.coords[d][static_cast<size_t>(t * g.output[d] + o)] = pos >= 0 && pos < g.input[d] ? pos : -1;
      }
  }
  return plan;
}

// Writes im2col row `row` of one group (input channel row / kernel size, kernel tap row % kernel size):
// out[p] = x[channel][input position read by output p at that tap] - zero, or 0 in the padding.
template <typename TX>
void Im2ColRow(const WindowGeometry& g, const Im2ColPlan& plan, const TX* x_group, int32_t zero, int64_t row,
               int16_t* out) {
  const size_t rank = g.rank(), last = rank - 1;
  const int64_t kernel_size = g.KernelSize();
  const TX* channel = x_group + (row / kernel_size) * g.InputSize();
  std::vector<int64_t> tap(rank);
  for (int64_t r = row % kernel_size, d = static_cast<int64_t>(last); d >= 0; --d) {
    tap[static_cast<size_t>(d)] = r % g.kernel[static_cast<size_t>(d)];
    r /= g.kernel[static_cast<size_t>(d)];
  }
  const int64_t width = g.output[last], in_width = g.input[last];
  const int64_t* last_coords = plan.coords[last].data() + tap[last] * width;
  const int64_t lines = width == 0 ? 0 : g.OutputSize() / width;
  for (int64_t line = 0; line < lines; ++line) {
    int64_t offset = 0;
    bool inside = true;
    for (int64_t r = line, d = static_cast<int64_t>(last) - 1; d >= 0; --d) {
      const size_t du = static_cast<size_t>(d);
      const int64_t c = plan.coords[du][static_cast<size_t>(tap[du] * g.output[du] + r % g.output[du])];
      r /= g.output[du];
      inside = inside && c >= 0;
      offset += c * plan.line_stride[du];
    }
    int16_t* dst = out + line * width;
    if (!inside) {
      std::fill(dst, dst + width, int16_t{0});
      continue;
    }
    const TX* src = channel + offset * in_width;
    for (int64_t o = 0; o < width; ++o) {
      const int64_t c = last_coords[o];
      dst[o] = c < 0 ? int16_t{0} : static_cast<int16_t>(src[c] - zero);
    }
  }
}

// w minus its zero points as int16 [out_channels x depth].
template <typename TW>
std::vector<int16_t> PackWeights(const IntConvShapes& s, const TW* w, const std::vector<int32_t>& zero_points) {
  std::vector<int16_t> packed(static_cast<size_t>(s.out_channels * s.depth));
  for (int64_t oc = 0; oc < s.out_channels; ++oc) {
    const int32_t zero = zero_points[zero_points.size() == 1 ? 0 : static_cast<size_t>(oc)];
    for (int64_t i = 0; i < s.depth; ++i)
      packed[static_cast<size_t>(oc * s.depth + i)] = static_cast<int16_t>(w[oc * s.depth + i] - zero);
  }
  return packed;
}

// Runs the convolution; for each (image, group) the int32 sums [outputs_per_group x output size] go
// to sums_for(image, group) (a buffer of that size) and then finish(image, group, sums).
// Many (image, group) pairs run in parallel with serial inner work; few run one by one with
// parallel im2col rows and GEMM tiles.
template <typename TX, typename SumsFor, typename Finish>
void IntegerConv(const ThreadPool& pool, const IntConvShapes& s, const TX* x, int32_t x_zero,
                 const std::vector<int16_t>& weights, SumsFor&& sums_for, Finish&& finish) {
  const WindowGeometry& g = s.window;
  const Im2ColPlan plan = PlanIm2Col(g);
  const int64_t out_size = g.OutputSize(), pairs = s.batch * s.group;
  auto run_pair = [&](int64_t pair, std::vector<int16_t>& columns, const ThreadPool* inner) {
    const int64_t n = pair / s.group, grp = pair % s.group;
    const TX* x_group = x + (n * s.in_channels + grp * s.channels_per_group) * g.InputSize();
    columns.resize(static_cast<size_t>(s.depth * out_size));
    ForRange(inner, s.depth, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, out_size)), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) Im2ColRow(g, plan, x_group, x_zero, row, columns.data() + row * out_size);
    });
    int32_t* sums = sums_for(n, grp);
    const int16_t* w = weights.data() + grp * s.outputs_per_group * s.depth;
    constexpr int64_t kRows = 16, kCols = 256;
    const int64_t row_tiles = (s.outputs_per_group + kRows - 1) / kRows, col_tiles = (out_size + kCols - 1) / kCols;
    ForRange(inner, row_tiles * col_tiles, 1, [&](int64_t begin, int64_t end) {
      for (int64_t tile = begin; tile < end; ++tile) {
        const int64_t r0 = (tile / col_tiles) * kRows, c0 = (tile % col_tiles) * kCols;
        GemmInt16(w + r0 * s.depth, columns.data() + c0, sums + r0 * out_size + c0,
                  std::min(kRows, s.outputs_per_group - r0), std::min(kCols, out_size - c0), s.depth, out_size, out_size);
      }
    });
    finish(n, grp, sums);
  };
  if (pairs >= 2 * pool.num_threads()) {
    pool.ParallelFor(pairs, 1, [&](int64_t begin, int64_t end) {
      std::vector<int16_t> columns;
      for (int64_t pair = begin; pair < end; ++pair) run_pair(pair, columns, nullptr);
    });
  } else {
    std::vector<int16_t> columns;
    for (int64_t pair = 0; pair < pairs; ++pair) run_pair(pair, columns, &pool);
  }
}

// Calls fn.template operator()<T>() for int8 or uint8.
template <typename Fn>
void Visit8Bit(const Node& node, DataType type, const char* what, Fn&& fn) {
  if (type == DataType::kUInt8) return fn.template operator()<uint8_t>();
  if (type == DataType::kInt8) return fn.template operator()<int8_t>();
  Fail(ErrorCode::kNotImplemented, node.Describe(), ": ", what, " of type ", DataTypeName(type), " is not supported");
}

// A zero point that must match its operand's type; per tensor, or per output channel when allowed.
std::vector<int32_t> ZeroPoint(const Node& node, const Tensor* zero_point, const Tensor& operand, int64_t channels,
                               const char* what) {
  if (!zero_point) return {0};
  if (zero_point->type() != operand.type())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " is ", DataTypeName(zero_point->type()),
         " but its operand is ", DataTypeName(operand.type()));
  CheckChannelParameter(node, zero_point->shape(), channels, what, "output channel");
  return ReadZeroPoints(node, zero_point, what);
}

class ConvInteger : public Kernel {
 public:
  explicit ConvInteger(const KernelInfo& info)
      : attrs_(ReadWindowAttributes(info.node())), group_(info.node().GetInt("group", 1)) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    const IntConvShapes s = ResolveShapes(node, attrs_, group_, x.shape(), w.shape());
    const int32_t x_zero = ZeroPoint(node, ctx.OptionalInput(2), x, 1, "x_zero_point")[0];
    const std::vector<int32_t> w_zero = ZeroPoint(node, ctx.OptionalInput(3), w, s.out_channels, "w_zero_point");
    Tensor& y = ctx.Output(0, DataType::kInt32, s.output);
    if (y.NumElements() == 0) return;
    int32_t* out = y.Data<int32_t>();
    const int64_t out_size = s.window.OutputSize();
    Visit8Bit(node, x.type(), "x", [&]<typename TX>() {
      Visit8Bit(node, w.type(), "w", [&]<typename TW>() {
        IntegerConv(
            ctx.thread_pool(), s, x.Data<TX>(), x_zero, PackWeights(s, w.Data<TW>(), w_zero),
            [&](int64_t n, int64_t grp) { return out + (n * s.out_channels + grp * s.outputs_per_group) * out_size; },
            [](int64_t, int64_t, const int32_t*) {});
      });
    });
  }

 private:
  WindowAttributes attrs_;
  int64_t group_;
};

class QLinearConv : public Kernel {
 public:
  explicit QLinearConv(const KernelInfo& info)
      : attrs_(ReadWindowAttributes(info.node())), group_(info.node().GetInt("group", 1)) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(3);
    const Tensor& y_zp = ctx.Input(7);
    const Tensor* bias = ctx.OptionalInput(8);
    const IntConvShapes s = ResolveShapes(node, attrs_, group_, x.shape(), w.shape());
    const int32_t x_zero = ZeroPoint(node, &ctx.Input(2), x, 1, "x_zero_point")[0];
    const std::vector<int32_t> w_zero = ZeroPoint(node, &ctx.Input(5), w, s.out_channels, "w_zero_point");
    CheckChannelParameter(node, ctx.Input(1).shape(), 1, "x_scale", "tensor");
    CheckChannelParameter(node, ctx.Input(4).shape(), s.out_channels, "w_scale", "output channel");
    CheckChannelParameter(node, ctx.Input(6).shape(), 1, "y_scale", "tensor");
    CheckChannelParameter(node, y_zp.shape(), 1, "y_zero_point", "tensor");
    if (bias && (bias->shape().rank() != 1 || bias->shape()[0] != s.out_channels))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": B ", bias->shape().ToString(), " must be [", s.out_channels, "]");
    const std::vector<float> multipliers = Multipliers(node, ctx, s.out_channels);
    const float y_zero = static_cast<float>(ReadZeroPoints(node, &y_zp, "y_zero_point")[0]);
    Tensor& y = ctx.Output(0, y_zp.type(), s.output);
    if (y.NumElements() == 0) return;
    const int32_t* b = bias ? bias->Data<int32_t>() : nullptr;
    const int64_t out_size = s.window.OutputSize(), sums_size = s.outputs_per_group * out_size;
    const bool parallel_pairs = s.batch * s.group >= 2 * ctx.thread_pool().num_threads();
    Visit8Bit(node, x.type(), "x", [&]<typename TX>() {
      Visit8Bit(node, w.type(), "w", [&]<typename TW>() {
        Visit8Bit(node, y_zp.type(), "y", [&]<typename TY>() {
          TY* out = y.Data<TY>();
          // One sums buffer per thread: pairs in flight at once each have their own thread.
          std::vector<std::vector<int32_t>> buffers(parallel_pairs ? static_cast<size_t>(s.batch * s.group) : 1);
          auto sums_for = [&](int64_t n, int64_t grp) {
            std::vector<int32_t>& buffer = buffers[parallel_pairs ? static_cast<size_t>(n * s.group + grp) : 0];
            buffer.resize(static_cast<size_t>(sums_size));
            return buffer.data();
          };
          auto finish = [&](int64_t n, int64_t grp, const int32_t* sums) {
            for (int64_t r = 0; r < s.outputs_per_group; ++r) {
              const int64_t oc = grp * s.outputs_per_group + r;
              const int32_t offset = b ? b[oc] : 0;
              const float multiplier = multipliers[static_cast<size_t>(oc)];
              const int32_t* sum = sums + r * out_size;
              TY* row = out + (n * s.out_channels + oc) * out_size;
              for (int64_t i = 0; i < out_size; ++i)
                row[i] = QuantizeValue<TY>(static_cast<float>(sum[i] + offset) * multiplier, y_zero);
            }
            if (parallel_pairs) std::vector<int32_t>().swap(buffers[static_cast<size_t>(n * s.group + grp)]);
          };
          IntegerConv(ctx.thread_pool(), s, x.Data<TX>(), x_zero, PackWeights(s, w.Data<TW>(), w_zero), sums_for,
                      finish);
        });
      });
    });
  }

 private:
  // x_scale * w_scale[oc] / y_scale per output channel.
  static std::vector<float> Multipliers(const Node& node, const KernelContext& ctx, int64_t channels) {
    const float x_scale = ReadScales(node, ctx.Input(1), "x_scale")[0];
    const float y_scale = ReadScales(node, ctx.Input(6), "y_scale")[0];
    const std::vector<float> w_scales = ReadScales(node, ctx.Input(4), "w_scale");
    std::vector<float> result(static_cast<size_t>(channels));
    for (size_t oc = 0; oc < result.size(); ++oc) result[oc] = x_scale * w_scales[w_scales.size() == 1 ? 0 : oc] / y_scale;
    return result;
  }

  WindowAttributes attrs_;
  int64_t group_;
};

}  // namespace

void RegisterIntegerConvKernels(KernelRegistry& registry) {
  const std::vector<DataType> q8{DataType::kInt8, DataType::kUInt8}, f32{DataType::kFloat};
  KernelDef integer;
  integer.op_type = "ConvInteger";
  integer.since_version = 10;
  integer.input_types = {{0, q8}, {1, q8}, {2, q8}, {3, q8}};
  registry.Register<ConvInteger>(std::move(integer));

  KernelDef qlinear;
  qlinear.op_type = "QLinearConv";
  qlinear.since_version = 10;
  qlinear.input_types = {{0, q8}, {1, f32}, {2, q8}, {3, q8}, {4, f32}, {5, q8}, {6, f32}, {7, q8},
                         {8, {DataType::kInt32}}};
  registry.Register<QLinearConv>(std::move(qlinear));
}

}  // namespace tessera::cpu
