// ConvInteger and QLinearConv (opset 10): N-D grouped convolution of 8-bit tensors with exact int32
// sums of (x - x_zero_point) * (w - w_zero_point); padding reads as x_zero_point, so it adds 0.
//
// With 1-3 spatial dims, oneDNN's int8 convolution (runtime source zero point, int8 weights without zero
// points) computes the sums. oneDNN takes neither uint8 weights nor weight zero points, so constant weights
// are written as w - shift in int8 (shift 128 for uint8, 0 for int8) and the rest of (w - w_zero) -- the
// per-channel constant shift - w_zero[oc] -- is added afterwards times the window sums of x - x_zero
// (computed over the group's channels, padding adding 0). Non-constant weights with zero points or uint8
// weights (and shapes oneDNN rejects) use im2col of x - x_zero into int16 and an int16 GEMM with the weights
// minus their zero points, as do CPUs without AVX-512 VNNI, where oneDNN's int8 products can saturate
// (DnnlInt8IsExact). Every path is exact. QLinearConv requantizes the sums here on any path.
#include <algorithm>
#include <optional>

#include "providers/cpu/common/dnnl_utils.h"
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
  const std::vector<int64_t> spatial(x.dims().begin() + 2, x.dims().end()),
      kernel(w.dims().begin() + 2, w.dims().end());
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
  for (size_t d = g.rank() - 1; d-- > 0;)
    plan.line_stride[d] = plan.line_stride[d + 1] * (d + 2 < g.rank() ? g.input[d + 1] : 1);
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

// The int32 sums of the whole convolution by im2col + GemmInt16. For each (image, group) the sums
// [outputs_per_group x output size] are written to `direct` (the full [N, M, spatial] output) when it
// is set, else to a scratch buffer, and then passed to finish(image, group, sums).
// Many (image, group) pairs run in parallel with serial inner work; few run one by one with
// parallel im2col rows and GEMM tiles.
template <typename TX, typename Finish>
void GemmConv(const ThreadPool& pool, const IntConvShapes& s, const TX* x, int32_t x_zero,
              const std::vector<int16_t>& weights, int32_t* direct, Finish&& finish) {
  const WindowGeometry& g = s.window;
  const Im2ColPlan plan = PlanIm2Col(g);
  const int64_t out_size = g.OutputSize(), pairs = s.batch * s.group;
  struct Scratch {
    std::vector<int16_t> columns;
    std::vector<int32_t> sums;
  };
  auto run_pair = [&](int64_t pair, Scratch& scratch, const ThreadPool* inner) {
    const int64_t n = pair / s.group, grp = pair % s.group;
    const TX* x_group = x + (n * s.in_channels + grp * s.channels_per_group) * g.InputSize();
    scratch.columns.resize(static_cast<size_t>(s.depth * out_size));
    int16_t* columns = scratch.columns.data();
    ForRange(inner, s.depth, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, out_size)),
             [&](int64_t begin, int64_t end) {
               for (int64_t row = begin; row < end; ++row)
                 Im2ColRow(g, plan, x_group, x_zero, row, columns + row * out_size);
             });
    if (!direct) scratch.sums.resize(static_cast<size_t>(s.outputs_per_group * out_size));
    int32_t* sums = direct ? direct + (n * s.out_channels + grp * s.outputs_per_group) * out_size : scratch.sums.data();
    const int16_t* w = weights.data() + grp * s.outputs_per_group * s.depth;
    constexpr int64_t kRows = 16, kCols = 256;
    const int64_t row_tiles = (s.outputs_per_group + kRows - 1) / kRows, col_tiles = (out_size + kCols - 1) / kCols;
    ForRange(inner, row_tiles * col_tiles, 1, [&](int64_t begin, int64_t end) {
      for (int64_t tile = begin; tile < end; ++tile) {
        const int64_t r0 = (tile / col_tiles) * kRows, c0 = (tile % col_tiles) * kCols;
        GemmInt16(w + r0 * s.depth, columns + c0, sums + r0 * out_size + c0, std::min(kRows, s.outputs_per_group - r0),
                  std::min(kCols, out_size - c0), s.depth, out_size, out_size);
      }
    });
    finish(n, grp, sums);
  };
  if (pairs >= 2 * pool.num_threads()) {
    pool.ParallelFor(pairs, 1, [&](int64_t begin, int64_t end) {
      Scratch scratch;
      for (int64_t pair = begin; pair < end; ++pair) run_pair(pair, scratch, nullptr);
    });
  } else {
    Scratch scratch;
    for (int64_t pair = 0; pair < pairs; ++pair) run_pair(pair, scratch, &pool);
  }
}


// For every (tap, output position) of the window geometry, the input offset it reads, or -1 in the padding: the
// same for every image and group, so built once per shape (DnnlIntConv::window_reads).
std::vector<int64_t> WindowReads(const WindowGeometry& g) {
  const Im2ColPlan plan = PlanIm2Col(g);
  const int64_t out_size = g.OutputSize(), taps = g.KernelSize();
  const size_t rank = g.rank();
  std::vector<int64_t> reads(static_cast<size_t>(taps * out_size));
  std::vector<int64_t> tap(rank);
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t r = t, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      tap[static_cast<size_t>(d)] = r % g.kernel[static_cast<size_t>(d)];
      r /= g.kernel[static_cast<size_t>(d)];
    }
    for (int64_t p = 0; p < out_size; ++p) {
      int64_t offset_in = 0;
      bool inside = true;
      for (int64_t r = p, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
        const size_t du = static_cast<size_t>(d);
        const int64_t c = plan.coords[du][static_cast<size_t>(tap[du] * g.output[du] + r % g.output[du])];
        r /= g.output[du];
        inside = inside && c >= 0;
        offset_in += c * (d + 1 < static_cast<int64_t>(rank) ? plan.line_stride[du] * g.input[rank - 1] : 1);
      }
      reads[static_cast<size_t>(t * out_size + p)] = inside ? offset_in : -1;
    }
  }
  return reads;
}

// Adds offset[oc] * (window sum of x - x_zero over the channels of oc's group) to sums [N, M, spatial]: the
// part of sum((x - x_zero) * (w - w_zero)) that oneDNN's shifted int8 weights leave out. Taps in the padding
// add 0, as x_zero_point there does. `reads` is WindowReads(s.window). Each (image, group) sums its channels,
// then the window, then updates its output rows, each stage split over input or output positions on the pool.
template <typename TX>
void AddWindowSums(const ThreadPool& pool, const IntConvShapes& s, const std::vector<int64_t>& reads, const TX* x,
                   int32_t x_zero, const std::vector<int32_t>& offset, int32_t* sums) {
  const WindowGeometry& g = s.window;
  const int64_t in_size = g.InputSize(), out_size = g.OutputSize(), taps = g.KernelSize();
  std::vector<int32_t> channel_sum(static_cast<size_t>(in_size)), window(static_cast<size_t>(out_size));
  for (int64_t pair = 0; pair < s.batch * s.group; ++pair) {
    const int64_t n = pair / s.group, grp = pair % s.group;
    const TX* x_group = x + (n * s.in_channels + grp * s.channels_per_group) * in_size;
    pool.ParallelFor(in_size, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) channel_sum[static_cast<size_t>(i)] = -x_zero * static_cast<int32_t>(s.channels_per_group);
      for (int64_t c = 0; c < s.channels_per_group; ++c)
        for (int64_t i = begin; i < end; ++i) channel_sum[static_cast<size_t>(i)] += x_group[c * in_size + i];
    });
    pool.ParallelFor(out_size, 2048, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) window[static_cast<size_t>(p)] = 0;
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t* read = reads.data() + t * out_size;
        for (int64_t p = begin; p < end; ++p)
          if (read[p] >= 0) window[static_cast<size_t>(p)] += channel_sum[static_cast<size_t>(read[p])];
      }
      for (int64_t r = 0; r < s.outputs_per_group; ++r) {
        const int64_t oc = grp * s.outputs_per_group + r;
        const int32_t k = offset[offset.size() == 1 ? 0 : static_cast<size_t>(oc)];
        if (k == 0) continue;
        int32_t* row = sums + (n * s.out_channels + oc) * out_size;
        for (int64_t p = begin; p < end; ++p) row[p] += k * window[static_cast<size_t>(p)];
      }
    });
  }
}

dnnl::memory::desc PlainDesc(const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return dnnl::memory::desc(dims, type, strides);
}

// oneDNN's int8 convolution for one (x shape, x type): x u8/s8 with a runtime zero point, s8 weights
// without zero points, s32 sums. `primitive` is empty when oneDNN rejects the geometry.
struct DnnlIntConv {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward primitive;
  dnnl::memory::desc src_plain, weights_plain, dst_plain;
  dnnl::memory packed_weights;  // set when w is a constant
  std::optional<LayoutReorder> src_to_blocked, dst_to_plain;
  std::vector<int64_t> window_reads;  // WindowReads of the geometry, for the shifted weights' correction
};

DnnlIntConv BuildDnnlIntConv(const IntConvShapes& s, DataType x_type, const Tensor& constant_weights) {
  using dnnl::memory;
  const WindowGeometry& g = s.window;
  memory::dims src{s.batch, s.in_channels}, dst{s.batch, s.out_channels}, weights;
  src.insert(src.end(), g.input.begin(), g.input.end());
  dst.insert(dst.end(), g.output.begin(), g.output.end());
  if (s.group > 1)
    weights = {s.group, s.outputs_per_group, s.channels_per_group};
  else
    weights = {s.out_channels, s.in_channels};
  weights.insert(weights.end(), g.kernel.begin(), g.kernel.end());
  memory::dims dilations;
  for (int64_t d : g.dilations) dilations.push_back(d - 1);  // oneDNN counts the gaps
  const memory::data_type src_type = x_type == DataType::kUInt8 ? memory::data_type::u8 : memory::data_type::s8;
  DnnlIntConv conv;
  conv.src_plain = PlainDesc(src, src_type);
  conv.weights_plain = PlainDesc(weights, memory::data_type::s8);
  conv.dst_plain = PlainDesc(dst, memory::data_type::s32);
  auto any = [](const memory::dims& d, memory::data_type t) { return memory::desc(d, t, memory::format_tag::any); };
  dnnl::primitive_attr attr = DnnlAttr();
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  try {
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                         any(src, src_type), any(weights, memory::data_type::s8), memory::desc(),
                                         any(dst, memory::data_type::s32), ToDnnlDims(g.strides), dilations,
                                         ToDnnlDims(g.pad_begin), ToDnnlDims(g.pad_end));
    conv.pd = dnnl::convolution_forward::primitive_desc(desc, attr, DnnlEngine());
  } catch (const dnnl::error&) {
    return conv;
  }
  conv.primitive = dnnl::convolution_forward(conv.pd);
  conv.src_to_blocked = MakeReorder(conv.src_plain, conv.pd.src_desc());
  conv.dst_to_plain = MakeReorder(conv.pd.dst_desc(), conv.dst_plain);
  if (constant_weights.defined()) {
    dnnl::memory plain(conv.weights_plain, DnnlEngine(), const_cast<void*>(constant_weights.raw_data()));
    conv.packed_weights = ReorderInto(plain, conv.pd.weights_desc());
  }
  conv.window_reads = WindowReads(g);
  return conv;
}

// Writes the int32 sums [N, M, spatial] of `conv` to `sums`.
void RunDnnlIntConv(KernelContext& ctx, const DnnlIntConv& conv, const Tensor& x, int32_t x_zero, const Tensor& w,
                    int32_t* sums) {
  const dnnl::engine& engine = DnnlEngine();
  dnnl::memory src(conv.src_plain, engine, const_cast<void*>(x.raw_data()));
  dnnl::memory dst(conv.dst_plain, engine, sums);
  dnnl::memory weights = conv.packed_weights;
  if (!weights) {
    weights = dnnl::memory(conv.weights_plain, engine, const_cast<void*>(w.raw_data()));
    weights = ReorderInto(weights, conv.pd.weights_desc());
  }
  dnnl::memory zero({{1}, dnnl::memory::data_type::s32, dnnl::memory::format_tag::x}, engine, &x_zero);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_WEIGHTS, weights},
                                             {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zero}};
  Tensor src_storage, dst_storage;
  args[DNNL_ARG_SRC] = InLayout(ctx, conv.src_to_blocked, src, src_storage);
  args[DNNL_ARG_DST] = conv.dst_to_plain ? ScratchMemory(ctx, conv.pd.dst_desc(), dst_storage) : dst;
  ExecuteDnnl(ctx, conv.primitive, conv.pd, args);
  if (conv.dst_to_plain) RunReorder(ctx, *conv.dst_to_plain, args[DNNL_ARG_DST], dst);
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

// What ConvInteger and QLinearConv share: geometry attributes, the constant weights and the choice
// between oneDNN (int8 weights without zero points, the symmetric quantization that quantizers
// produce) and the exact im2col path for everything else (uint8 weights, weight zero points).
class IntegerConvBase : public Kernel {
 protected:
  IntegerConvBase(const KernelInfo& info, size_t weights_input)
      : attrs_(ReadWindowAttributes(info.node())),
        group_(info.node().GetInt("group", 1)),
        constant_weights_(info.ConstantInput(weights_input) ? *info.ConstantInput(weights_input) : Tensor()) {
    // oneDNN's int8 weights for constant weights: uint8 moves down by 128, int8 stays.
    if (constant_weights_.defined() && constant_weights_.type() == DataType::kUInt8) {
      shifted_weights_ = Tensor::Allocate(DataType::kInt8, constant_weights_.shape());
      const uint8_t* w = constant_weights_.Data<uint8_t>();
      int8_t* shifted = shifted_weights_.Data<int8_t>();
      for (int64_t i = 0; i < constant_weights_.NumElements(); ++i) shifted[i] = static_cast<int8_t>(w[i] - 128);
      weight_shift_ = 128;
    } else if (constant_weights_.defined() && constant_weights_.type() == DataType::kInt8) {
      shifted_weights_ = constant_weights_;
    }
  }

  // Writes the int32 sums of the convolution [N, M, spatial] to `sums` when `direct`, else calls
  // finish(image, group, sums of that group's channels) per (image, group), possibly in parallel.
  template <typename Finish>
  void Sums(KernelContext& ctx, const IntConvShapes& s, const Tensor& x, int32_t x_zero, const Tensor& w,
            const std::vector<int32_t>& w_zero, int32_t* direct, Finish&& finish) const {
    const bool symmetric_int8 =
        w.type() == DataType::kInt8 && std::all_of(w_zero.begin(), w_zero.end(), [](int32_t z) { return z == 0; });
    const bool shifted = shifted_weights_.defined();
    if ((symmetric_int8 || shifted) && s.window.rank() <= 3 && DnnlInt8IsExact()) {
      std::vector<int64_t> key{static_cast<int64_t>(x.type())};
      AppendShapeKey(key, x.shape());
      AppendShapeKey(key, w.shape());
      std::shared_ptr<const DnnlIntConv> conv = primitives_.Get(
          ctx, key, [&] { return BuildDnnlIntConv(s, x.type(), shifted ? shifted_weights_ : constant_weights_); });
      if (conv->primitive) {
        // What the int8 weights leave out of w - w_zero, per output channel: shift - w_zero[oc].
        std::vector<int32_t> offsets;
        for (int32_t z : w_zero) offsets.push_back((shifted ? weight_shift_ : 0) - z);
        return DnnlSums(ctx, *conv, s, x, x_zero, w, offsets, direct, finish);
      }
    }
    Visit8Bit(ctx.node(), x.type(), "x", [&]<typename TX>() {
      Visit8Bit(ctx.node(), w.type(), "w", [&]<typename TW>() {
        GemmConv(ctx.thread_pool(), s, x.Data<TX>(), x_zero, PackWeights(s, w.Data<TW>(), w_zero), direct, finish);
      });
    });
  }

  WindowAttributes attrs_;
  int64_t group_;

 private:
  template <typename Finish>
  static void DnnlSums(KernelContext& ctx, const DnnlIntConv& conv, const IntConvShapes& s, const Tensor& x,
                       int32_t x_zero, const Tensor& w, const std::vector<int32_t>& offsets, int32_t* direct,
                       Finish&& finish) {
    Tensor storage;
    if (!direct) storage = Tensor::Allocate(DataType::kInt32, s.output, ctx.allocator());
    int32_t* sums = direct ? direct : storage.Data<int32_t>();
    RunDnnlIntConv(ctx, conv, x, x_zero, w, sums);
    if (std::any_of(offsets.begin(), offsets.end(), [](int32_t k) { return k != 0; }))
      Visit8Bit(ctx.node(), x.type(), "x", [&]<typename TX>() {
        AddWindowSums(ctx.thread_pool(), s, conv.window_reads, x.Data<TX>(), x_zero, offsets, sums);
      });
    const int64_t group_size = s.outputs_per_group * s.window.OutputSize();
    ctx.thread_pool().ParallelFor(s.batch * s.group, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pair = begin; pair < end; ++pair) finish(pair / s.group, pair % s.group, sums + pair * group_size);
    });
  }

  Tensor constant_weights_;  // shares the initializer's buffer; undefined when w is not constant
  Tensor shifted_weights_;   // constant weights as int8 (w - weight_shift_); undefined when w is not constant
  int32_t weight_shift_ = 0;
  ShapeCache<DnnlIntConv> primitives_;
};

class ConvInteger : public IntegerConvBase {
 public:
  explicit ConvInteger(const KernelInfo& info) : IntegerConvBase(info, 1) {}

  void Compute(KernelContext& ctx) const override {
    const Node& node = ctx.node();
    const Tensor& x = ctx.Input(0);
    const Tensor& w = ctx.Input(1);
    const IntConvShapes s = ResolveShapes(node, attrs_, group_, x.shape(), w.shape());
    const int32_t x_zero = ZeroPoint(node, ctx.OptionalInput(2), x, 1, "x_zero_point")[0];
    const std::vector<int32_t> w_zero = ZeroPoint(node, ctx.OptionalInput(3), w, s.out_channels, "w_zero_point");
    Tensor& y = ctx.Output(0, DataType::kInt32, s.output);
    if (y.NumElements() == 0) return;
    Sums(ctx, s, x, x_zero, w, w_zero, y.Data<int32_t>(), [](int64_t, int64_t, const int32_t*) {});
  }
};

class QLinearConv : public IntegerConvBase {
 public:
  explicit QLinearConv(const KernelInfo& info) : IntegerConvBase(info, 3) {}

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
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": B ", bias->shape().ToString(), " must be [", s.out_channels,
           "]");
    const std::vector<float> multipliers = Multipliers(node, ctx, s.out_channels);
    const float y_zero = static_cast<float>(ReadZeroPoints(node, &y_zp, "y_zero_point")[0]);
    Tensor& y = ctx.Output(0, y_zp.type(), s.output);
    if (y.NumElements() == 0) return;
    const int32_t* b = bias ? bias->Data<int32_t>() : nullptr;
    const int64_t out_size = s.window.OutputSize();
    Visit8Bit(node, y_zp.type(), "y", [&]<typename TY>() {
      TY* out = y.Data<TY>();
      // (sum + B[oc]) * x_scale * w_scale[oc] / y_scale, rounded half to even, plus y_zero_point.
      auto requantize = [&](int64_t n, int64_t grp, const int32_t* sums) {
        for (int64_t r = 0; r < s.outputs_per_group; ++r) {
          const int64_t oc = grp * s.outputs_per_group + r;
          const int32_t offset = b ? b[oc] : 0;
          const float multiplier = multipliers[static_cast<size_t>(oc)];
          const int32_t* sum = sums + r * out_size;
          TY* row = out + (n * s.out_channels + oc) * out_size;
          RequantizeSpan(sum, out_size, offset, multiplier, y_zero, row);
        }
      };
      Sums(ctx, s, x, x_zero, w, w_zero, nullptr, requantize);
    });
  }

 private:
  // x_scale * w_scale[oc] / y_scale per output channel.
  static std::vector<float> Multipliers(const Node& node, const KernelContext& ctx, int64_t channels) {
    const float x_scale = ReadScales(node, ctx.Input(1), "x_scale")[0];
    const float y_scale = ReadScales(node, ctx.Input(6), "y_scale")[0];
    const std::vector<float> w_scales = ReadScales(node, ctx.Input(4), "w_scale");
    std::vector<float> result(static_cast<size_t>(channels));
    for (size_t oc = 0; oc < result.size(); ++oc)
      result[oc] = x_scale * w_scales[w_scales.size() == 1 ? 0 : oc] / y_scale;
    return result;
  }
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
  qlinear.input_types = {
      {0, q8}, {1, f32}, {2, q8}, {3, q8}, {4, f32}, {5, q8}, {6, f32}, {7, q8}, {8, {DataType::kInt32}}};
  registry.Register<QLinearConv>(std::move(qlinear));
}

}  // namespace tessera::cpu
