#include "tessera/ep/conv_transpose_geometry.h"

#include <string>

#include "tessera/status.h"

namespace tessera {
namespace {

std::string Join(const std::vector<int64_t>& v) { return Shape(v).ToString(); }

std::vector<int64_t> PerAxis(const Node& node, const std::vector<int64_t>& given, size_t rank, int64_t fallback,
                             int64_t minimum, const char* name) {
  if (given.empty()) return std::vector<int64_t>(rank, fallback);
  if (given.size() != rank)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attribute '", name, "' ", Join(given), " needs ", rank,
         " values, one per spatial axis");
  for (int64_t v : given)
    if (v < minimum)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attribute '", name, "' ", Join(given), " must be >= ",
           minimum);
  return given;
}

// The pads that make axis `i` produce `target` outputs: SAME_UPPER puts the odd unit at the end, other
// modes at the beginning (ONNX spec). A negative total (target larger than the natural size) extends
// the end.
void PadsForTarget(ConvTransposeShapes& s, size_t i, int64_t output_padding, int64_t target, bool same_upper) {
  const int64_t extent = (s.kernel[i] - 1) * s.dilations[i] + 1;
  const int64_t total = s.strides[i] * (s.input[i] - 1) + output_padding + extent - target;
  if (total < 0) {
    s.pad_begin[i] = 0;
    s.pad_end[i] = total;
  } else {
    s.pad_begin[i] = same_upper ? total / 2 : total - total / 2;
    s.pad_end[i] = total - s.pad_begin[i];
  }
  s.pad_end[i] -= output_padding;
}

void ResolvePads(const Node& node, const ConvTransposeAttributes& a, ConvTransposeShapes& s) {
  const size_t rank = s.rank();
  const std::string& auto_pad = a.window.auto_pad;
  const bool same_upper = auto_pad == "SAME_UPPER", same_lower = auto_pad == "SAME_LOWER";
  if (!(auto_pad == "NOTSET" || auto_pad == "VALID" || same_upper || same_lower))
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": unknown auto_pad '", auto_pad, "'");
  const std::vector<int64_t> output_padding = PerAxis(node, a.output_padding, rank, 0, 0, "output_padding");
  std::vector<int64_t> target = a.output_shape;
  if (target.size() == rank + 2) target.erase(target.begin(), target.begin() + 2);  // given as N, C, spatial...
  if (!target.empty() && target.size() != rank)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attribute 'output_shape' ", Join(a.output_shape),
         " needs ", rank, " spatial values");
  s.pad_begin.assign(rank, 0);
  s.pad_end.assign(rank, 0);
  if (target.empty() && auto_pad == "NOTSET" && !a.window.pads.empty()) {
    if (a.window.pads.size() != 2 * rank)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attribute 'pads' ", Join(a.window.pads), " needs ",
           2 * rank, " values");
    for (size_t i = 0; i < rank; ++i) {
      s.pad_begin[i] = a.window.pads[i];
      s.pad_end[i] = a.window.pads[i + rank];
      if (s.pad_begin[i] < 0 || s.pad_end[i] < 0)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": negative pads ", Join(a.window.pads));
    }
  }
  for (size_t i = 0; i < rank; ++i) {
    if (!target.empty()) PadsForTarget(s, i, output_padding[i], target[i], same_upper);
    else if (same_upper || same_lower) PadsForTarget(s, i, output_padding[i], s.input[i] * s.strides[i], same_upper);
    else s.pad_end[i] -= output_padding[i];
  }
}

}  // namespace

ConvTransposeShapes ResolveConvTransposeShapes(const Node& node, const ConvTransposeAttributes& a, const Shape& x, const Shape& w,
                                  const Tensor* bias) {
  if (x.rank() < 3 || w.rank() != x.rank())
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": X ", x.ToString(), " and W ", w.ToString(),
         " must have the same rank >= 3 (N, C, spatial...)");
  ConvTransposeShapes s;
  s.batch = x[0];
  s.in_channels = x[1];
  s.group = a.group;
  s.out_channels = w[1] * a.group;
  if (a.group < 1 || w[0] != s.in_channels || s.in_channels % a.group != 0)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": channel mismatch: X ", x.ToString(), ", W ", w.ToString(),
         ", group ", a.group, " (need W[0] == C and C divisible by group)");
  if (bias && (bias->shape().rank() != 1 || bias->shape()[0] != s.out_channels))
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": bias ", bias->shape().ToString(), " must be [",
         s.out_channels, "] for W ", w.ToString(), " and group ", a.group);
  const size_t rank = x.rank() - 2;
  s.input.assign(x.dims().begin() + 2, x.dims().end());
  s.kernel.assign(w.dims().begin() + 2, w.dims().end());
  if (!a.window.kernel_shape.empty() && a.window.kernel_shape != s.kernel)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": kernel_shape ", Join(a.window.kernel_shape),
         " does not match W ", w.ToString());
  s.strides = PerAxis(node, a.window.strides, rank, 1, 1, "strides");
  s.dilations = PerAxis(node, a.window.dilations, rank, 1, 1, "dilations");
  ResolvePads(node, a, s);
  std::vector<int64_t> y{s.batch, s.out_channels};
  for (size_t i = 0; i < rank; ++i) {
    const int64_t extent = (s.kernel[i] - 1) * s.dilations[i] + 1;
    s.output.push_back(s.strides[i] * (s.input[i] - 1) + extent - s.pad_begin[i] - s.pad_end[i]);
    if (s.output.back() < 1 && s.input[i] > 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": pads ", Join(s.pad_begin), "+", Join(s.pad_end),
           " leave no output for spatial input ", Join(s.input), " and kernel ", Join(s.kernel));
    y.push_back(s.output.back());
  }
  s.y = Shape(std::move(y));
  return s;
}


ConvTransposeAttributes ReadConvTransposeAttributes(const Node& node) {
  return ConvTransposeAttributes{ReadWindowAttributes(node), node.GetInts("output_padding"),
                                 node.GetInts("output_shape"), node.GetInt("group", 1)};
}

}  // namespace tessera
