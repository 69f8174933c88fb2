#include "tessera/ep/resize_geometry.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "tessera/status.h"

namespace tessera {
namespace {

template <typename Enum>
Enum ParseChoice(const Node& node, const std::string& attribute, const std::string& fallback,
                 std::initializer_list<std::pair<const char*, Enum>> choices) {
  const std::string value = node.GetString(attribute, fallback);
  for (const auto& [name, choice] : choices)
    if (value == name) return choice;
  Fail(ErrorCode::kNotImplemented, node.Describe(), ": unsupported ", attribute, " '", value, "'");
}

}  // namespace

ResizeAttributes ReadResizeAttributes(const Node& node) {
  using enum ResizeInterpolation;
  ResizeAttributes a;
  a.mode = ParseChoice<ResizeInterpolation>(node, "mode", "nearest",
                       {{"nearest", kNearest}, {"linear", kLinear}, {"bilinear", kLinear}, {"cubic", kCubic}});
  if (node.op_type == "Upsample" || node.opset < 11) {
    a.coordinates = ResizeCoordinateMode::kAsymmetric;
    a.nearest = ResizeNearestMode::kLegacy;
    if (node.op_type == "Upsample" && node.opset < 9) {
      const std::vector<float> scales = node.GetFloats("scales");
      a.attribute_scales.assign(scales.begin(), scales.end());
    } else {
      a.scales_input = 1;
    }
    return a;
  }
  using enum ResizeCoordinateMode;
  a.coordinates = ParseChoice<ResizeCoordinateMode>(node, "coordinate_transformation_mode", "half_pixel",
                              {{"half_pixel", kHalfPixel},
                               {"half_pixel_symmetric", kHalfPixelSymmetric},
                               {"pytorch_half_pixel", kPytorchHalfPixel},
                               {"align_corners", kAlignCorners},
                               {"asymmetric", kAsymmetric},
                               {"tf_half_pixel_for_nn", kTfHalfPixelForNn},
                               {"tf_crop_and_resize", kTfCropAndResize}});
  a.nearest = ParseChoice<ResizeNearestMode>(node, "nearest_mode", "round_prefer_floor",
                          {{"round_prefer_floor", ResizeNearestMode::kRoundPreferFloor},
                           {"round_prefer_ceil", ResizeNearestMode::kRoundPreferCeil},
                           {"floor", ResizeNearestMode::kFloor},
                           {"ceil", ResizeNearestMode::kCeil}});
  a.aspect = ParseChoice<ResizeAspectRatioPolicy>(node, "keep_aspect_ratio_policy", "stretch",
                         {{"stretch", ResizeAspectRatioPolicy::kStretch},
                          {"not_larger", ResizeAspectRatioPolicy::kNotLarger},
                          {"not_smaller", ResizeAspectRatioPolicy::kNotSmaller}});
  a.cubic_coeff_a = node.GetFloat("cubic_coeff_a", -0.75f);
  a.exclude_outside = node.GetInt("exclude_outside", 0) != 0;
  a.antialias = node.GetInt("antialias", 0) != 0;
  a.extrapolation_value = node.GetFloat("extrapolation_value", 0.0f);
  a.axes = node.GetInts("axes");
  a.roi_input = 1;
  a.scales_input = 2;
  a.sizes_input = 3;
  return a;
}


namespace {

std::vector<int64_t> ResizedAxes(const Node& node, const ResizeAttributes& a, int64_t rank) {
  if (a.axes.empty()) {
    std::vector<int64_t> all(static_cast<size_t>(rank));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  std::vector<int64_t> axes;
  for (int64_t axis : a.axes) {
    if (axis < -rank || axis >= rank)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", axis, " is out of range for rank ", rank);
    axes.push_back(axis < 0 ? axis + rank : axis);
  }
  return axes;
}

void ApplyScales(const Node& node, const ResizeAttributes& a, const std::vector<int64_t>& axes,
                 const std::vector<double>& scales, std::vector<ResizeAxis>& g) {
  if (scales.size() != axes.size())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": 'scales' has ", scales.size(), " values for ", axes.size(),
         " resized axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    ResizeAxis& ax = g[static_cast<size_t>(axes[i])];
    ax.scale = static_cast<float>(scales[i]);
    if (!(ax.scale > 0.0f))
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": scale ", scales[i], " for axis ", axes[i],
           " must be positive");
    const float crop = a.coordinates == ResizeCoordinateMode::kTfCropAndResize ? ax.roi_end - ax.roi_start : 1.0f;
    ax.resized_length = static_cast<float>(ax.in) * ax.scale * crop;
    ax.out = static_cast<int64_t>(std::floor(ax.resized_length));
  }
}

void ApplySizes(const Node& node, const ResizeAttributes& a, const std::vector<int64_t>& axes,
                const std::vector<double>& sizes, std::vector<ResizeAxis>& g) {
  if (sizes.size() != axes.size())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": 'sizes' has ", sizes.size(), " values for ", axes.size(),
         " resized axes");
  for (size_t i = 0; i < axes.size(); ++i)
    if (sizes[i] < 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": negative size ", sizes[i]);
  if (a.aspect == ResizeAspectRatioPolicy::kStretch) {
    for (size_t i = 0; i < axes.size(); ++i) {
      ResizeAxis& ax = g[static_cast<size_t>(axes[i])];
      ax.out = static_cast<int64_t>(sizes[i]);
      ax.scale = ax.in > 0 ? static_cast<float>(ax.out) / static_cast<float>(ax.in) : 1.0f;
      ax.resized_length = static_cast<float>(ax.out);
    }
    return;
  }
  // One scale for all resized axes: the largest that fits inside `sizes` (not_larger) or the smallest
  // that covers it (not_smaller); sizes are then rounded half up.
  const bool not_larger = a.aspect == ResizeAspectRatioPolicy::kNotLarger;
  float scale = not_larger ? std::numeric_limits<float>::max() : 0.0f;
  for (size_t i = 0; i < axes.size(); ++i) {
    const ResizeAxis& ax = g[static_cast<size_t>(axes[i])];
    const float ratio = static_cast<float>(sizes[i]) / static_cast<float>(ax.in);
    scale = not_larger ? std::min(scale, ratio) : std::max(scale, ratio);
  }
  for (int64_t axis : axes) {
    ResizeAxis& ax = g[static_cast<size_t>(axis)];
    ax.scale = scale;
    ax.resized_length = scale * static_cast<float>(ax.in);
    ax.out = static_cast<int64_t>(std::floor(ax.resized_length + 0.5f));
  }
}

}  // namespace

std::vector<ResizeAxis> ResolveResizeGeometry(const Node& node, const ResizeAttributes& a, const Shape& x,
                                          const std::vector<double>& roi, const std::vector<double>& scales,
                                          const std::vector<double>& sizes) {
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot resize a scalar");
  std::vector<ResizeAxis> g(static_cast<size_t>(rank));
  for (size_t d = 0; d < g.size(); ++d) g[d].in = g[d].out = x[d];
  const std::vector<int64_t> axes = ResizedAxes(node, a, rank);
  if (a.coordinates == ResizeCoordinateMode::kTfCropAndResize && !roi.empty()) {
    if (roi.size() != 2 * axes.size())
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": 'roi' has ", roi.size(), " values, expected ",
           2 * axes.size(), " (starts then ends of the resized axes)");
    for (size_t i = 0; i < axes.size(); ++i) {
      g[static_cast<size_t>(axes[i])].roi_start = static_cast<float>(roi[i]);
      g[static_cast<size_t>(axes[i])].roi_end = static_cast<float>(roi[axes.size() + i]);
    }
  }
  if (scales.empty() == sizes.empty())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": exactly one of 'scales' and 'sizes' must be given, got ",
         scales.empty() ? "neither" : "both");
  if (!scales.empty()) ApplyScales(node, a, axes, scales, g);
  else ApplySizes(node, a, axes, sizes, g);
  return g;
}

// The input coordinate that output coordinate `o` samples along one axis (may lie outside [0, in - 1]).
float ResizeSourceCoordinate(ResizeCoordinateMode mode, const ResizeAxis& g, int64_t o) {
  const float x = static_cast<float>(o);
  const float last_in = static_cast<float>(g.in - 1);
  switch (mode) {
    case ResizeCoordinateMode::kHalfPixel:
      return (x + 0.5f) / g.scale - 0.5f;
    case ResizeCoordinateMode::kHalfPixelSymmetric: {
      const float adjustment = static_cast<float>(g.out) / g.resized_length;
      const float center = static_cast<float>(g.in) / 2.0f;
      return center * (1.0f - adjustment) + (x + 0.5f) / g.scale - 0.5f;
    }
    case ResizeCoordinateMode::kPytorchHalfPixel:
      return g.out > 1 ? (x + 0.5f) / g.scale - 0.5f : 0.0f;
    case ResizeCoordinateMode::kAlignCorners:
      return g.out > 1 ? x * last_in / (g.resized_length - 1.0f) : 0.0f;
    case ResizeCoordinateMode::kAsymmetric:
      return x / g.scale;
    case ResizeCoordinateMode::kTfHalfPixelForNn:
      return (x + 0.5f) / g.scale;
    case ResizeCoordinateMode::kTfCropAndResize:
      return g.out > 1 ? g.roi_start * last_in + x * (g.roi_end - g.roi_start) * last_in / (g.resized_length - 1.0f)
                       : 0.5f * (g.roi_start + g.roi_end) * last_in;
  }
  return x;
}

// Only tf_crop_and_resize extrapolates: its coordinates outside the input take extrapolation_value.
bool ResizeExtrapolates(ResizeCoordinateMode mode, const ResizeAxis& g, float x) {
  return mode == ResizeCoordinateMode::kTfCropAndResize && (x < 0.0f || x > static_cast<float>(g.in - 1));
}

int64_t ResizeNearestIndex(ResizeNearestMode mode, float x, float scale) {
  const float down = std::floor(x);
  switch (mode) {
    case ResizeNearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(x == down + 0.5f ? down : std::round(x));
    case ResizeNearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(x == down + 0.5f ? std::ceil(x) : std::round(x));
    case ResizeNearestMode::kFloor:
      return static_cast<int64_t>(down);
    case ResizeNearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case ResizeNearestMode::kLegacy:
      return static_cast<int64_t>(scale < 1.0f ? std::ceil(x) : down);
  }
  return static_cast<int64_t>(down);
}


namespace {

double FilterWeight(ResizeInterpolation mode, double a, double t) {
  t = std::abs(t);
  if (mode == ResizeInterpolation::kLinear) return std::max(0.0, 1.0 - t);
  if (t <= 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  if (t < 2.0) return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
  return 0.0;
}

}  // namespace

// Taps at floor(x) + k for k in [first, 1 - first]; antialiasing stretches the filter by 1 / scale when
// downscaling (more taps) and normalizes the weights, as exclude_outside does after dropping the taps
// that fall outside the input.
ResizeTaps MakeResizeTaps(const ResizeAttributes& a, const ResizeAxis& g) {
  if (a.mode == ResizeInterpolation::kNearest) {
    ResizeTaps t;
    t.taps = 1;
    t.index.resize(static_cast<size_t>(g.out));
    t.weight.assign(static_cast<size_t>(g.out), 1.0);
    t.extrapolated.resize(static_cast<size_t>(g.out));
    t.identity = g.in == g.out;
    for (int64_t o = 0; o < g.out; ++o) {
      const float x = ResizeSourceCoordinate(a.coordinates, g, o);
      const int64_t index = std::clamp<int64_t>(ResizeNearestIndex(a.nearest, x, g.scale), 0, g.in - 1);
      t.index[static_cast<size_t>(o)] = index;
      t.extrapolated[static_cast<size_t>(o)] = ResizeExtrapolates(a.coordinates, g, x);
      t.any_extrapolated = t.any_extrapolated || t.extrapolated[static_cast<size_t>(o)];
      t.identity = t.identity && index == o;
    }
    t.identity = t.identity && !t.any_extrapolated;
    return t;
  }
  const double support = a.mode == ResizeInterpolation::kLinear ? 1.0 : 2.0;
  const double stretch = a.antialias ? std::min(1.0, static_cast<double>(g.scale)) : 1.0;
  const int64_t first = static_cast<int64_t>(std::floor(-support / stretch)) + 1;
  ResizeTaps t;
  t.taps = 2 - 2 * first;
  t.index.resize(static_cast<size_t>(g.out * t.taps));
  t.weight.resize(t.index.size());
  t.extrapolated.resize(static_cast<size_t>(g.out));
  t.identity = g.in == g.out;
  for (int64_t o = 0; o < g.out; ++o) {
    const float x = ResizeSourceCoordinate(a.coordinates, g, o);
    t.identity = t.identity && x == static_cast<float>(o);
    t.extrapolated[static_cast<size_t>(o)] = ResizeExtrapolates(a.coordinates, g, x);
    t.any_extrapolated = t.any_extrapolated || t.extrapolated[static_cast<size_t>(o)];
    const double base = std::floor(static_cast<double>(x)), ratio = static_cast<double>(x) - base;
    double sum = 0.0;
    for (int64_t k = 0; k < t.taps; ++k) {
      const int64_t index = static_cast<int64_t>(base) + first + k;
      double w = FilterWeight(a.mode, a.cubic_coeff_a, stretch * (static_cast<double>(first + k) - ratio));
      if (a.exclude_outside && (index < 0 || index >= g.in)) w = 0.0;
      t.index[static_cast<size_t>(o * t.taps + k)] = std::clamp<int64_t>(index, 0, g.in - 1);
      t.weight[static_cast<size_t>(o * t.taps + k)] = w;
      sum += w;
    }
    if ((a.antialias || a.exclude_outside) && sum != 0.0)
      for (int64_t k = 0; k < t.taps; ++k) t.weight[static_cast<size_t>(o * t.taps + k)] /= sum;
  }
  t.identity = t.identity && !t.any_extrapolated;
  return t;
}


}  // namespace tessera
