// EP SDK: the geometry of Resize (opset 10-19) and Upsample (opset 7-9), shared by every EP's kernel: the attributes,
// each axis's input and output length and scale from the roi / scales / sizes inputs (with `axes` and
// keep_aspect_ratio_policy), the source coordinate of every output coordinate under each
// coordinate_transformation_mode, the nearest index under each nearest_mode, and the linear / cubic filter taps
// (antialiasing and exclude_outside included). Coordinates follow the ONNX reference: computed in float, the resized
// length of an axis being in * scale when scales are given and the requested size when sizes are given. Opset < 11
// (Upsample, Resize-10) uses asymmetric coordinates and, for nearest, floor when upsampling, ceil when downsampling.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/ep/graph.h"
#include "tessera/shape.h"

namespace tessera {

enum class ResizeInterpolation { kNearest, kLinear, kCubic };
enum class ResizeCoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
enum class ResizeNearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };
enum class ResizeAspectRatioPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttributes {
  ResizeInterpolation mode = ResizeInterpolation::kNearest;
  ResizeCoordinateMode coordinates = ResizeCoordinateMode::kHalfPixel;
  ResizeNearestMode nearest = ResizeNearestMode::kRoundPreferFloor;
  ResizeAspectRatioPolicy aspect = ResizeAspectRatioPolicy::kStretch;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  float extrapolation_value = 0.0f;
  std::vector<int64_t> axes;             // as written; empty = all axes
  std::vector<double> attribute_scales;  // Upsample-7/8 carry their scales as an attribute
  int roi_input = -1, scales_input = -1, sizes_input = -1;  // -1: this opset has no such input
};

// Reads a Resize or Upsample node's attributes; throws kNotImplemented naming the node for an unknown mode.
ResizeAttributes ReadResizeAttributes(const Node& node);

// One axis of the resize, resolved against the input shape and the roi / scales / sizes inputs.
struct ResizeAxis {
  int64_t in = 1, out = 1;
  float scale = 1.0f;           // output / input, as the coordinate transforms use it
  float resized_length = 1.0f;  // in * scale (* roi extent) for scales, the requested size for sizes
  float roi_start = 0.0f, roi_end = 1.0f;
};

// Every axis of X (rank >= 1) given the roi, scales and sizes values (empty when absent; exactly one of scales and
// sizes non-empty). Throws kInvalidArgument naming `node` for values that do not fit X.
std::vector<ResizeAxis> ResolveResizeGeometry(const Node& node, const ResizeAttributes& a, const Shape& x,
                                              const std::vector<double>& roi, const std::vector<double>& scales,
                                              const std::vector<double>& sizes);

// The input coordinate that output coordinate `o` samples along `axis` (may lie outside [0, in - 1]).
float ResizeSourceCoordinate(ResizeCoordinateMode mode, const ResizeAxis& axis, int64_t o);
// Only tf_crop_and_resize extrapolates: its coordinates outside the input take extrapolation_value.
bool ResizeExtrapolates(ResizeCoordinateMode mode, const ResizeAxis& axis, float x);
// The nearest input index of source coordinate x (not clamped).
int64_t ResizeNearestIndex(ResizeNearestMode mode, float x, float scale);

// The resampling filter of one axis: `taps` (source index, weight) pairs per output coordinate. Nearest has one
// tap of weight 1; linear 2 and cubic 4 (more when antialiasing stretches the filter for downscaling).
struct ResizeTaps {
  int64_t taps = 0;
  std::vector<int64_t> index;         // out * taps, clamped into [0, in) (edge padding)
  std::vector<double> weight;         // out * taps
  std::vector<uint8_t> extrapolated;  // per output coordinate
  bool any_extrapolated = false;
  bool identity = false;  // output coordinate o reads exactly input o
};
ResizeTaps MakeResizeTaps(const ResizeAttributes& a, const ResizeAxis& axis);

}  // namespace tessera
