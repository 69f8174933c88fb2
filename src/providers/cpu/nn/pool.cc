// Pooling: MaxPool (ceil_mode, dilations, storage_order, optional Indices), AveragePool
// (count_include_pad, ceil_mode, dilations), GlobalAveragePool and GlobalMaxPool. Up to three spatial
// dims; 1-D and 2-D problems are lifted to 3-D with unit leading dims so one loop nest serves all.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "providers/cpu/common/window_geometry.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

constexpr size_t kMaxSpatialRank = 3;

struct PoolShapes {
  int64_t planes = 0;  // N * C
  WindowGeometry window;  // lifted to kMaxSpatialRank dims
  Shape output;
};

void LiftTo3d(WindowGeometry& g) {
  const size_t missing = kMaxSpatialRank - g.rank();
  auto lift = [missing](std::vector<int64_t>& v, int64_t fill) { v.insert(v.begin(), missing, fill); };
  lift(g.input, 1), lift(g.kernel, 1), lift(g.strides, 1), lift(g.dilations, 1);
  lift(g.pad_begin, 0), lift(g.pad_end, 0), lift(g.output, 1);
}

PoolShapes ResolvePoolShapes(const Node& node, const WindowAttributes& attrs, const Shape& x, bool global) {
  if (x.rank() < 3 || x.rank() > kMaxSpatialRank + 2)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input ", x.ToString(), " must be [N, C, spatial...] with 1 to ",
         kMaxSpatialRank, " spatial dims");
  std::vector<int64_t> spatial(x.dims().begin() + 2, x.dims().end());
  if (!global && attrs.kernel_shape.size() != spatial.size())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": kernel_shape ", Shape(attrs.kernel_shape).ToString(),
         " does not match input ", x.ToString());
  PoolShapes s;
  s.planes = x[0] * x[1];
  s.window = global ? ResolveWindow({}, spatial, spatial, node) : ResolveWindow(attrs, spatial, attrs.kernel_shape, node);
  std::vector<int64_t> out{x[0], x[1]};
  out.insert(out.end(), s.window.output.begin(), s.window.output.end());
  s.output = Shape(std::move(out));
  LiftTo3d(s.window);
  return s;
}

// Calls visit(out_index, window) for every output position of one plane, where window yields the
// in-bounds input positions (flat index and per-dim coordinates) and the count of positions inside
// the padded extent.
struct WindowRange {
  int64_t begin[kMaxSpatialRank], end[kMaxSpatialRank];  // in-bounds, stepping by dilation
  int64_t padded_count;  // window positions inside [-pad_begin, input + pad_end)
};

template <typename Visit>
void ForEachWindow(const WindowGeometry& g, Visit&& visit) {
  int64_t out_index = 0;
  int64_t o[kMaxSpatialRank];
  for (o[0] = 0; o[0] < g.output[0]; ++o[0])
    for (o[1] = 0; o[1] < g.output[1]; ++o[1])
      for (o[2] = 0; o[2] < g.output[2]; ++o[2], ++out_index) {
        WindowRange r;
        r.padded_count = 1;
        for (size_t d = 0; d < kMaxSpatialRank; ++d) {
          const int64_t start = o[d] * g.strides[d] - g.pad_begin[d], step = g.dilations[d];
          int64_t first = start, padded = 0;
          for (int64_t k = 0; k < g.kernel[d]; ++k) {
            const int64_t pos = start + k * step;
            if (pos < g.input[d] + g.pad_end[d]) ++padded;
          }
          while (first < 0) first += step;
          const int64_t last = std::min(start + (g.kernel[d] - 1) * step, g.input[d] - 1);
          r.begin[d] = first;
          r.end[d] = first <= last ? last + 1 : first;  // empty when no in-bounds position
          r.padded_count *= padded;
        }
        visit(out_index, r);
      }
}

template <typename T>
void MaxPoolPlane(const WindowGeometry& g, const T* x, T* y, int64_t* indices, int64_t plane_offset,
                  bool column_major) {
  const int64_t h = g.input[1], w = g.input[2], d = g.input[0];
  ForEachWindow(g, [&](int64_t out, const WindowRange& r) {
    T best = std::numeric_limits<T>::lowest();
    int64_t best_pos[kMaxSpatialRank] = {r.begin[0], r.begin[1], r.begin[2]};
    for (int64_t i = r.begin[0]; i < r.end[0]; i += g.dilations[0])
      for (int64_t j = r.begin[1]; j < r.end[1]; j += g.dilations[1])
        for (int64_t k = r.begin[2]; k < r.end[2]; k += g.dilations[2]) {
          const T v = x[(i * h + j) * w + k];
          if (v > best) best = v, best_pos[0] = i, best_pos[1] = j, best_pos[2] = k;
        }
    y[out] = best;
    if (indices) {
      const int64_t flat = column_major ? (best_pos[2] * h + best_pos[1]) * d + best_pos[0]
                                        : (best_pos[0] * h + best_pos[1]) * w + best_pos[2];
      indices[out] = plane_offset + flat;
    }
  });
}

template <typename T>
void AveragePoolPlane(const WindowGeometry& g, const T* x, T* y, bool count_include_pad) {
  const int64_t h = g.input[1], w = g.input[2];
  ForEachWindow(g, [&](int64_t out, const WindowRange& r) {
    double sum = 0;
    int64_t count = 0;
    for (int64_t i = r.begin[0]; i < r.end[0]; i += g.dilations[0])
      for (int64_t j = r.begin[1]; j < r.end[1]; j += g.dilations[1])
        for (int64_t k = r.begin[2]; k < r.end[2]; k += g.dilations[2]) {
          sum += static_cast<double>(x[(i * h + j) * w + k]);
          ++count;
        }
    const int64_t divisor = count_include_pad ? r.padded_count : count;
    y[out] = static_cast<T>(divisor > 0 ? sum / static_cast<double>(divisor) : 0.0);
  });
}

bool WantsIndices(const Node& node) { return node.outputs.size() > 1 && !node.outputs[1].empty(); }

enum class PoolKind { kMax, kAverage };

class Pool : public Kernel {
 public:
  Pool(const KernelInfo& info, PoolKind kind, bool global)
      : kind_(kind),
        global_(global),
        attrs_(ReadWindowAttributes(info.node())),
        count_include_pad_(info.node().GetInt("count_include_pad", 0) != 0),
        column_major_(info.node().GetInt("storage_order", 0) != 0) {
    if (kind == PoolKind::kAverage && WantsIndices(info.node()))
      Fail(ErrorCode::kInvalidModel, info.node().Describe(), ": AveragePool has no Indices output");
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const PoolShapes s = ResolvePoolShapes(ctx.node(), attrs_, x.shape(), global_);
    Tensor& y = ctx.Output(0, x.type(), s.output);
    int64_t* indices = WantsIndices(ctx.node()) ? ctx.Output(1, DataType::kInt64, s.output).Data<int64_t>() : nullptr;
    if (y.NumElements() == 0) return;
    switch (x.type()) {
      case DataType::kFloat: return Run<float>(ctx, s, x, y, indices);
      case DataType::kDouble: return Run<double>(ctx, s, x, y, indices);
      case DataType::kInt8: return Run<int8_t>(ctx, s, x, y, indices);
      case DataType::kUInt8: return Run<uint8_t>(ctx, s, x, y, indices);
      default: Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": element type ", DataTypeName(x.type()));
    }
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx, const PoolShapes& s, const Tensor& x, Tensor& y, int64_t* indices) const {
    const WindowGeometry& g = s.window;
    const int64_t in_size = g.InputSize(), out_size = g.OutputSize();
    const T* xd = x.Data<T>();
    T* yd = y.Data<T>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * g.KernelSize()));
    ctx.thread_pool().ParallelFor(s.planes, grain, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        if (kind_ == PoolKind::kMax)
          MaxPoolPlane(g, xd + p * in_size, yd + p * out_size, indices ? indices + p * out_size : nullptr,
                       p * in_size, column_major_);
        else
          AveragePoolPlane(g, xd + p * in_size, yd + p * out_size, count_include_pad_);
      }
    });
  }

  PoolKind kind_;
  bool global_;
  WindowAttributes attrs_;
  bool count_include_pad_;
  bool column_major_;
};

void RegisterPool(KernelRegistry& registry, const char* op, PoolKind kind, bool global, std::vector<DataType> types) {
  KernelDef def;
  def.op_type = op;
  def.input_types = {{0, std::move(types)}};
  registry.Register(std::move(def), [kind, global](const KernelInfo& info) {
    return std::make_unique<Pool>(info, kind, global);
  });
}

}  // namespace

void RegisterPoolKernels(KernelRegistry& registry) {
  const DataType f32 = DataType::kFloat, f64 = DataType::kDouble;
  RegisterPool(registry, "MaxPool", PoolKind::kMax, false, {f32, f64, DataType::kInt8, DataType::kUInt8});
  RegisterPool(registry, "AveragePool", PoolKind::kAverage, false, {f32, f64});
  RegisterPool(registry, "GlobalMaxPool", PoolKind::kMax, true, {f32, f64});
  RegisterPool(registry, "GlobalAveragePool", PoolKind::kAverage, true, {f32, f64});
}

}  // namespace tessera::cpu
