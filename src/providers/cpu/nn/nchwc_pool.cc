// Pooling in the blocked channel layout (nn/nchwc_shapes.h), domain ai.tessera: NchwcMaxPool and
// NchwcAveragePool (2-D windows with MaxPool's / AveragePool's attributes; MaxPool without Indices),
// NchwcGlobalMaxPool and NchwcGlobalAveragePool. X and Y are blocked [N, C/B, H, W, B] (B = C: NHWC); every
// window position is one contiguous B-wide vector, so the inner loops vectorize. The nchwc_layout pass produces them.
#include <algorithm>
#include <limits>
#include <vector>

#include "providers/cpu/common/vector_math.h"
#include "providers/cpu/common/window_geometry.h"
#include "providers/cpu/cpu_kernels.h"
#include "providers/cpu/nn/nchwc_shapes.h"

namespace tessera::cpu {
namespace {

enum class PoolKind { kMax, kAverage };

// Window positions of one spatial axis for output index `o`: the in-bounds ones and the count of those
// inside the padded extent [-pad_begin, input + pad_end) (AveragePool's count_include_pad divisor).
struct AxisWindow {
  int64_t first, step, count, padded_count;
};

AxisWindow WindowAlong(const WindowGeometry& g, size_t axis, int64_t o) {
  const int64_t start = o * g.strides[axis] - g.pad_begin[axis], step = g.dilations[axis];
  AxisWindow w{0, step, 0, 0};
  bool found = false;
  for (int64_t k = 0; k < g.kernel[axis]; ++k) {
    const int64_t pos = start + k * step;
    if (pos < g.input[axis] + g.pad_end[axis]) ++w.padded_count;
    if (pos < 0 || pos >= g.input[axis]) continue;
    if (!found) w.first = pos, found = true;
    ++w.count;
  }
  return w;
}

// Pools output row `oh` of one (image, channel block): x is [H, W, width], y is [OH, OW, width]; `cols` holds the
// window of every output column (the same for all rows); `acc` holds `width` floats. kWidth > 0 fixes the width
// at compile time (8 and 16, the common blocks: the accumulator stays in registers); 0 takes `runtime_width`
// (NHWC: C).
template <int64_t kWidth, PoolKind kKind>
void PoolRow(const WindowGeometry& g, const std::vector<AxisWindow>& cols, const float* x, float* y, int64_t oh,
             int64_t runtime_width, float* acc_storage, bool count_include_pad) {
  const int64_t width = kWidth > 0 ? kWidth : runtime_width, image_width = g.input[1];
  const AxisWindow rows = WindowAlong(g, 0, oh);
  float fixed[kWidth > 0 ? kWidth : 1];
  float* acc = kWidth > 0 ? fixed : acc_storage;
  for (int64_t ow = 0; ow < g.output[1]; ++ow) {
    const AxisWindow& col = cols[ow];
    for (int64_t b = 0; b < width; ++b) acc[b] = kKind == PoolKind::kMax ? std::numeric_limits<float>::lowest() : 0.0f;
    for (int64_t r = 0, h = rows.first; r < rows.count; ++r, h += rows.step)
      for (int64_t c = 0, w = col.first; c < col.count; ++c, w += col.step) {
        const float* v = x + (h * image_width + w) * width;
        // Select, not std::max: a float ?: keeps the loop scalar under -ftrapping-math (vector_math.h).
        for (int64_t b = 0; b < width; ++b)
          acc[b] = kKind == PoolKind::kMax ? Select(acc[b] < v[b], v[b], acc[b]) : acc[b] + v[b];
      }
    float* out = y + (oh * g.output[1] + ow) * width;
    if constexpr (kKind == PoolKind::kMax) {
      for (int64_t b = 0; b < width; ++b) out[b] = acc[b];
    } else {
      const int64_t divisor = count_include_pad ? rows.padded_count * col.padded_count : rows.count * col.count;
      const float scale = divisor > 0 ? 1.0f / static_cast<float>(divisor) : 0.0f;
      for (int64_t b = 0; b < width; ++b) out[b] = acc[b] * scale;
    }
  }
}

// Separable max pooling: the maximum over a rectangular window is the maximum over its rows of the maxima over its
// columns. ColumnMaxRow takes input row h ([W, width]) to `out` ([OW, width], each output column's window maximum);
// RowMaxRow takes output row oh from those ([H, OW, width]). k_h + k_w comparisons per output instead of k_h * k_w
// (SPP's 13 x 13 window: 26 instead of 169), with the same result: positions outside the input are skipped on each
// axis, and a NaN is never selected in either form.
template <int64_t kWidth>
void ColumnMaxRow(const std::vector<AxisWindow>& cols, const float* x_row, float* out, int64_t output_width,
                  int64_t runtime_width) {
  const int64_t width = kWidth > 0 ? kWidth : runtime_width;
  for (int64_t ow = 0; ow < output_width; ++ow) {
    float* acc = out + ow * width;
    for (int64_t b = 0; b < width; ++b) acc[b] = std::numeric_limits<float>::lowest();
    const AxisWindow& col = cols[ow];
    for (int64_t c = 0, w = col.first; c < col.count; ++c, w += col.step) {
      const float* v = x_row + w * width;
      for (int64_t b = 0; b < width; ++b) acc[b] = Select(acc[b] < v[b], v[b], acc[b]);
    }
  }
}

template <int64_t kWidth>
void RowMaxRow(const WindowGeometry& g, const float* column_maxima, float* y, int64_t oh, int64_t runtime_width) {
  const int64_t width = kWidth > 0 ? kWidth : runtime_width, row_size = g.output[1] * width;
  const AxisWindow rows = WindowAlong(g, 0, oh);
  float* out = y + oh * row_size;
  for (int64_t e = 0; e < row_size; ++e) out[e] = std::numeric_limits<float>::lowest();
  for (int64_t r = 0, h = rows.first; r < rows.count; ++r, h += rows.step) {
    const float* v = column_maxima + h * row_size;
    for (int64_t e = 0; e < row_size; ++e) out[e] = Select(out[e] < v[e], v[e], out[e]);
  }
}

class NchwcPool : public Kernel {
 public:
  NchwcPool(const KernelInfo& info, PoolKind kind, bool global)
      : kind_(kind),
        global_(global),
        attrs_(ReadWindowAttributes(info.node())),
        count_include_pad_(info.node().GetInt("count_include_pad", 0) != 0) {
    if (info.node().outputs.size() > 1)
      Fail(ErrorCode::kInvalidModel, info.node().Describe(), ": blocked pooling has no Indices output");
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Node& node = ctx.node();
    const Shape plain = PlainShapeOfBlocked(node, "X", x.shape());
    const std::vector<int64_t> spatial{plain[2], plain[3]};
    if (!global_ && attrs_.kernel_shape.size() != 2)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": kernel_shape ", Shape(attrs_.kernel_shape).ToString(),
           " must have 2 dims for blocked input ", x.shape().ToString());
    const WindowGeometry g =
        global_ ? ResolveWindow({}, spatial, spatial, node) : ResolveWindow(attrs_, spatial, attrs_.kernel_shape, node);
    Tensor& y = ctx.Output(0, x.type(), Shape{plain[0], x.shape()[1], g.output[0], g.output[1], x.shape()[4]});
    if (y.NumElements() == 0) return;
    if (x.shape()[4] == 16) return Run<16>(ctx, g, x, y);
    if (x.shape()[4] == 8) return Run<8>(ctx, g, x, y);
    return Run<0>(ctx, g, x, y);
  }

 private:
  template <int64_t kWidth>
  void Run(KernelContext& ctx, const WindowGeometry& g, const Tensor& x, Tensor& y) const {
    const int64_t width = x.shape()[4];
    const int64_t in_size = g.InputSize() * width, out_size = g.OutputSize() * width;
    const int64_t rows = x.shape()[0] * x.shape()[1] * g.output[0];  // (image, channel block, output row)
    const float* xd = x.Data<float>();
    float* yd = y.Data<float>();
    const int64_t row_work = g.output[1] * width * g.KernelSize();
    const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, row_work));
    std::vector<AxisWindow> cols(g.output[1]);
    for (int64_t ow = 0; ow < g.output[1]; ++ow) cols[ow] = WindowAlong(g, 1, ow);
    if (kind_ == PoolKind::kMax && g.kernel[0] > 1 && g.kernel[1] > 1 && g.KernelSize() >= 9) {
      // Separable (above): every input row's column maxima, then each output row from k_h of them.
      const int64_t planes = x.shape()[0] * x.shape()[1], column_size = g.input[0] * g.output[1] * width;
      std::vector<float> maxima(static_cast<size_t>(planes * column_size));
      const int64_t column_grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, g.output[1] * width * g.kernel[1]));
      ctx.thread_pool().ParallelFor(planes * g.input[0], column_grain, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t i = task / g.input[0], h = task % g.input[0];
          ColumnMaxRow<kWidth>(cols, xd + i * in_size + h * g.input[1] * width,
                               maxima.data() + i * column_size + h * g.output[1] * width, g.output[1], width);
        }
      });
      const int64_t row_grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, g.output[1] * width * g.kernel[0]));
      ctx.thread_pool().ParallelFor(rows, row_grain, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t i = task / g.output[0], oh = task % g.output[0];
          RowMaxRow<kWidth>(g, maxima.data() + i * column_size, yd + i * out_size, oh, width);
        }
      });
      return;
    }
    ctx.thread_pool().ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> acc(kWidth > 0 ? 0 : width);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t i = task / g.output[0], oh = task % g.output[0];
        if (kind_ == PoolKind::kMax)
          PoolRow<kWidth, PoolKind::kMax>(g, cols, xd + i * in_size, yd + i * out_size, oh, width, acc.data(), false);
        else
          PoolRow<kWidth, PoolKind::kAverage>(g, cols, xd + i * in_size, yd + i * out_size, oh, width, acc.data(),
                                              count_include_pad_);
      }
    });
  }

  PoolKind kind_;
  bool global_;
  WindowAttributes attrs_;
  bool count_include_pad_;
};

void RegisterNchwcPool(KernelRegistry& registry, const char* op, PoolKind kind, bool global) {
  KernelDef def;
  def.op_type = op;
  def.domain = "ai.tessera";
  def.input_types = {{0, {DataType::kFloat}}};
  registry.Register(std::move(def),
                    [kind, global](const KernelInfo& info) { return std::make_unique<NchwcPool>(info, kind, global); });
}

}  // namespace

void RegisterNchwcPoolKernels(KernelRegistry& registry) {
  RegisterNchwcPool(registry, "NchwcMaxPool", PoolKind::kMax, false);
  RegisterNchwcPool(registry, "NchwcAveragePool", PoolKind::kAverage, false);
  RegisterNchwcPool(registry, "NchwcGlobalMaxPool", PoolKind::kMax, true);
  RegisterNchwcPool(registry, "NchwcGlobalAveragePool", PoolKind::kAverage, true);
}

}  // namespace tessera::cpu
