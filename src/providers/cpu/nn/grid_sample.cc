// GridSample (opset 16, 4-D; opset 20 mode names accepted): samples X [N, C, H, W] at the normalized
// (x, y) positions of grid [N, Ho, Wo, 2] with nearest, bilinear or bicubic interpolation.
//
// Coordinates map [-1, 1] to pixel centers of the corner pixels (align_corners) or to the outer image
// edges. Padding: zeros reads 0 outside the image; border clamps; reflection mirrors at the edges. For
// nearest/bilinear the padding is applied to the sampling position, for bicubic to each of the 4x4 taps
// (as PyTorch, whose semantics ONNX follows).
#include <algorithm>
#include <cmath>

#include "providers/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

enum class Interpolation { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

Interpolation ParseMode(const Node& node) {
  const std::string mode = node.GetString("mode", "bilinear");
  if (mode == "bilinear" || mode == "linear") return Interpolation::kLinear;
  if (mode == "nearest") return Interpolation::kNearest;
  if (mode == "bicubic" || mode == "cubic") return Interpolation::kCubic;
  Fail(ErrorCode::kInvalidModel, node.Describe(), ": unknown mode '", mode, "'");
}

Padding ParsePadding(const Node& node) {
  const std::string padding = node.GetString("padding_mode", "zeros");
  if (padding == "zeros") return Padding::kZeros;
  if (padding == "border") return Padding::kBorder;
  if (padding == "reflection") return Padding::kReflection;
  Fail(ErrorCode::kInvalidModel, node.Describe(), ": unknown padding_mode '", padding, "'");
}

// Mirrors x into [low, high] (bounds given doubled, so half-pixel edges stay integral).
float Reflect(float x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  const float low = static_cast<float>(twice_low) / 2;
  const float span = static_cast<float>(twice_high - twice_low) / 2;
  x = std::fabs(x - low);
  const float extra = std::fmod(x, span);
  const int64_t flips = static_cast<int64_t>(std::floor(x / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

// One image plane [height, width] with the node's padding and corner convention.
struct Plane {
  const float* data;
  int64_t height, width;
  Padding padding;
  bool align_corners;

  float Denormalize(float g, int64_t size) const {
    return align_corners ? (g + 1) / 2 * static_cast<float>(size - 1) : ((g + 1) * static_cast<float>(size) - 1) / 2;
  }
  // Applies border/reflection padding to a coordinate along a dimension of `size`.
  float Pad(float x, int64_t size) const {
    if (padding == Padding::kBorder) return std::clamp(x, 0.0f, static_cast<float>(size - 1));
    if (padding == Padding::kReflection) {
      x = align_corners ? Reflect(x, 0, 2 * (size - 1)) : Reflect(x, -1, 2 * size - 1);
      return std::clamp(x, 0.0f, static_cast<float>(size - 1));
    }
    return x;
  }
  float At(int64_t y, int64_t x) const {
    if (y < 0 || y >= height || x < 0 || x >= width) return 0;
    return data[y * width + x];
  }
  // A bicubic tap: padded like a coordinate, then read (zeros outside for zeros padding).
  float Tap(int64_t y, int64_t x) const {
    if (padding == Padding::kZeros) return At(y, x);
    const auto py = static_cast<int64_t>(Pad(static_cast<float>(y), height));
    const auto px = static_cast<int64_t>(Pad(static_cast<float>(x), width));
    return At(py, px);
  }
};

void CubicWeights(float t, float w[4]) {
  constexpr float a = -0.75f;
  auto near = [](float d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };        // |d| <= 1
  auto far = [](float d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

float Sample(const Plane& p, Interpolation mode, float gx, float gy) {
  float x = p.Denormalize(gx, p.width), y = p.Denormalize(gy, p.height);
  if (mode == Interpolation::kCubic) {
    const float x0 = std::floor(x), y0 = std::floor(y);
    float wx[4], wy[4];
    CubicWeights(x - x0, wx);
    CubicWeights(y - y0, wy);
    const auto ix = static_cast<int64_t>(x0) - 1, iy = static_cast<int64_t>(y0) - 1;
    float sum = 0;
    for (int64_t r = 0; r < 4; ++r) {
      float row = 0;
      for (int64_t c = 0; c < 4; ++c) row += wx[c] * p.Tap(iy + r, ix + c);
      sum += wy[r] * row;
    }
    return sum;
  }
  x = p.Pad(x, p.width);
  y = p.Pad(y, p.height);
  if (mode == Interpolation::kNearest)
    return p.At(static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
  const float x0 = std::floor(x), y0 = std::floor(y);
  const float tx = x - x0, ty = y - y0;
  const auto ix = static_cast<int64_t>(x0), iy = static_cast<int64_t>(y0);
  return (1 - ty) * ((1 - tx) * p.At(iy, ix) + tx * p.At(iy, ix + 1)) +
         ty * ((1 - tx) * p.At(iy + 1, ix) + tx * p.At(iy + 1, ix + 1));
}

class GridSample : public Kernel {
 public:
  explicit GridSample(const KernelInfo& info)
      : mode_(ParseMode(info.node())),
        padding_(ParsePadding(info.node())),
        align_corners_(info.node().GetInt("align_corners", 0) != 0) {}

  void Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.Input(0);
    const Tensor& grid = ctx.Input(1);
    const Shape& xs = x.shape();
    const Shape& gs = grid.shape();
    if (xs.rank() != 4 || gs.rank() != 4 || gs[0] != xs[0] || gs[3] != 2)
      Fail(ErrorCode::kNotImplemented, ctx.node().Describe(), ": supports X [N,C,H,W] with grid [N,Ho,Wo,2], got ",
           xs.ToString(), " and ", gs.ToString());
    const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], ho = gs[1], wo = gs[2];
    Tensor& y = ctx.Output(0, DataType::kFloat, Shape{n, c, ho, wo});
    const float* xd = x.Data<float>();
    const float* gd = grid.Data<float>();
    float* yd = y.Data<float>();
    ctx.thread_pool().ParallelFor(n * c, 1, [&](int64_t begin, int64_t end) {
      for (int64_t nc = begin; nc < end; ++nc) {
        const Plane plane{xd + nc * h * w, h, w, padding_, align_corners_};
        const float* g = gd + (nc / c) * ho * wo * 2;
        float* out = yd + nc * ho * wo;
        for (int64_t i = 0; i < ho * wo; ++i) out[i] = Sample(plane, mode_, g[2 * i], g[2 * i + 1]);
      }
    });
  }

 private:
  Interpolation mode_;
  Padding padding_;
  bool align_corners_;
};

}  // namespace

void RegisterGridSampleKernels(KernelRegistry& registry) {
  KernelDef def;
  def.op_type = "GridSample";
  def.since_version = 16;
  def.input_types = {{0, {DataType::kFloat}}, {1, {DataType::kFloat}}};
  registry.Register<GridSample>(std::move(def));
}

}  // namespace tessera::cpu
