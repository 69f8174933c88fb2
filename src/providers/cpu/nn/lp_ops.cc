// Lp ops: LpNormalization (opset 1) divides by the Lp norm along an axis; LpPool (opset 1, 2, 11) and
// GlobalLpPool (opset 1, 2) take (sum |x|^p)^(1/p) over each window (padding contributes zeros). In
// opset 1 the pools' `p` is a float attribute; from opset 2 it is an int; both default to 2.
#include <cmath>
#include <vector>

#include "providers/cpu/common/window_geometry.h"
#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

double ReadP(const Node& node) {
  const auto it = node.attributes.find("p");
  if (it == node.attributes.end()) return 2.0;
  return it->second.type == Attribute::Type::kFloat ? static_cast<double>(it->second.f) : static_cast<double>(it->second.i);
}

double PowAbs(double v, double p) { return p == 2.0 ? v * v : p == 1.0 ? std::fabs(v) : std::pow(std::fabs(v), p); }
double Root(double sum, double p) { return p == 2.0 ? std::sqrt(sum) : p == 1.0 ? sum : std::pow(sum, 1.0 / p); }

class LpNormalization : public Kernel {
 public:
  explicit LpNormalization(const KernelInfo& info)
      : axis_(info.node().GetInt("axis", -1)), p_(info.node().GetInt("p", 2)) {
    if (p_ != 1 && p_ != 2) Fail(ErrorCode::kInvalidModel, info.node().Describe(), ": p must be 1 or 2, got ", p_);
  }

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const size_t axis = static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(x.shape().rank())));
    const int64_t outer = x.shape().SizeTo(axis), n = x.shape()[axis], inner = x.shape().SizeFrom(axis + 1);
    Tensor& y = ctx.Output(0, x.type(), x.shape());
    const float* xd = x.Data<float>();
    float* yd = y.Data<float>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += PowAbs(xd[(o * n + i) * inner + j], static_cast<double>(p_));
        const double norm = Root(sum, static_cast<double>(p_));
        for (int64_t i = 0; i < n; ++i) {
          const int64_t at = (o * n + i) * inner + j;
          yd[at] = norm == 0 ? 0.0f : static_cast<float>(xd[at] / norm);
        }
      }
  }

 private:
  int64_t axis_, p_;
};

class LpPool : public Kernel {
 public:
  LpPool(const KernelInfo& info, bool global)
      : global_(global), p_(ReadP(info.node())), attrs_(global ? WindowAttributes{} : ReadWindowAttributes(info.node())) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Shape& xs = x.shape();
    if (xs.rank() < 3)
      Fail(ErrorCode::kInvalidArgument, ctx.node().Describe(), ": X must be [N, C, D1, ...], got ", xs.ToString());
    const std::vector<int64_t> input(xs.dims().begin() + 2, xs.dims().end());
    const WindowGeometry g = ResolveWindow(attrs_, input, global_ ? input : attrs_.kernel_shape, ctx.node());
    Shape ys = xs;
    for (size_t d = 0; d < g.rank(); ++d) ys[d + 2] = g.output[d];
    Tensor& y = ctx.Output(0, x.type(), ys);
    const int64_t planes = xs[0] * xs[1], in_size = g.InputSize(), out_size = g.OutputSize();
    ctx.thread_pool().ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane)
        PoolPlane(g, x.Data<float>() + plane * in_size, y.Data<float>() + plane * out_size);
    });
  }

 private:
  // Visits every output position and, within it, every window position (odometers over the dims).
  void PoolPlane(const WindowGeometry& g, const float* x, float* y) const {
    const size_t rank = g.rank();
    std::vector<int64_t> out(rank, 0), k(rank, 0);
    for (int64_t o = 0; o < g.OutputSize(); ++o) {
      double sum = 0;
      std::fill(k.begin(), k.end(), 0);
      for (int64_t w = 0; w < g.KernelSize(); ++w) {
        int64_t offset = 0;
        bool inside = true;
        for (size_t d = 0; d < rank && inside; ++d) {
          const int64_t pos = out[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d];
          inside = pos >= 0 && pos < g.input[d];
          offset = offset * g.input[d] + pos;
        }
        if (inside) sum += PowAbs(x[offset], p_);
        Advance(k, g.kernel);
      }
      y[o] = static_cast<float>(Root(sum, p_));
      Advance(out, g.output);
    }
  }

  static void Advance(std::vector<int64_t>& index, const std::vector<int64_t>& extent) {
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < extent[d]) return;
      index[d] = 0;
    }
  }

  bool global_;
  double p_;
  WindowAttributes attrs_;
};

KernelDef FloatDef(const char* op) {
  KernelDef def;
  def.op_type = op;
  def.input_types = {{0, {DataType::kFloat}}};
  return def;
}

}  // namespace

void RegisterLpKernels(KernelRegistry& registry) {
  registry.Register<LpNormalization>(FloatDef("LpNormalization"));
  registry.Register(FloatDef("LpPool"), [](const KernelInfo& info) { return std::make_unique<LpPool>(info, false); });
  registry.Register(FloatDef("GlobalLpPool"), [](const KernelInfo& info) { return std::make_unique<LpPool>(info, true); });
}

}  // namespace tessera::cpu
