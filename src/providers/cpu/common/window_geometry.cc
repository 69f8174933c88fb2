#include "tessera/ep/window_geometry.h"

#include <numeric>

#include "tessera/shape.h"
#include "tessera/status.h"

namespace tessera {
namespace {

std::string Join(const std::vector<int64_t>& v) { return Shape(v).ToString(); }

std::vector<int64_t> OrDefault(const std::vector<int64_t>& given, size_t rank, int64_t fallback, const char* name,
                               const Node& node) {
  if (given.empty()) return std::vector<int64_t>(rank, fallback);
  if (given.size() != rank)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attribute '", name, "' ", Join(given), " has ", given.size(),
         " values but the input has ", rank, " spatial dimensions");
  for (int64_t v : given)
    if (v < 1) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attribute '", name, "' ", Join(given), " must be >= 1");
  return given;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ONNX output size for explicit pads; ceil mode drops a last window that would start in the end padding.
int64_t ExplicitOutput(int64_t in, int64_t extent, int64_t stride, int64_t begin, int64_t end, bool ceil_mode) {
  int64_t span = in + begin + end - extent;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? CeilDiv(span, stride) : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + begin) --out;
  return out;
}

}  // namespace

WindowAttributes ReadWindowAttributes(const Node& node) {
  WindowAttributes a;
  a.auto_pad = node.GetString("auto_pad", "NOTSET");
  a.kernel_shape = node.GetInts("kernel_shape");
  a.strides = node.GetInts("strides");
  a.dilations = node.GetInts("dilations");
  a.pads = node.GetInts("pads");
  a.ceil_mode = node.GetInt("ceil_mode", 0) != 0;
  return a;
}

int64_t WindowGeometry::InputSize() const { return std::reduce(input.begin(), input.end(), int64_t{1}, std::multiplies<>()); }
int64_t WindowGeometry::OutputSize() const { return std::reduce(output.begin(), output.end(), int64_t{1}, std::multiplies<>()); }
int64_t WindowGeometry::KernelSize() const { return std::reduce(kernel.begin(), kernel.end(), int64_t{1}, std::multiplies<>()); }

WindowGeometry ResolveWindow(const WindowAttributes& attrs, const std::vector<int64_t>& input,
                             const std::vector<int64_t>& kernel, const Node& node) {
  const size_t rank = input.size();
  WindowGeometry g;
  g.input = input;
  g.kernel = OrDefault(kernel, rank, 1, "kernel_shape", node);
  g.strides = OrDefault(attrs.strides, rank, 1, "strides", node);
  g.dilations = OrDefault(attrs.dilations, rank, 1, "dilations", node);
  g.pad_begin.assign(rank, 0);
  g.pad_end.assign(rank, 0);
  g.output.assign(rank, 0);
  const bool same_upper = attrs.auto_pad == "SAME_UPPER", same_lower = attrs.auto_pad == "SAME_LOWER";
  if (attrs.auto_pad == "NOTSET" && !attrs.pads.empty()) {
    if (attrs.pads.size() != 2 * rank)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": attribute 'pads' ", Join(attrs.pads), " needs ", 2 * rank,
           " values for ", rank, " spatial dimensions");
    for (size_t i = 0; i < rank; ++i) {
      g.pad_begin[i] = attrs.pads[i];
      g.pad_end[i] = attrs.pads[i + rank];
      if (g.pad_begin[i] < 0 || g.pad_end[i] < 0)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": negative pads ", Join(attrs.pads));
    }
  } else if (!(attrs.auto_pad == "NOTSET" || attrs.auto_pad == "VALID" || same_upper || same_lower)) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": unknown auto_pad '", attrs.auto_pad, "'");
  }
  for (size_t i = 0; i < rank; ++i) {
    const int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (same_upper || same_lower) {
      g.output[i] = CeilDiv(input[i], g.strides[i]);
      int64_t total = std::max<int64_t>(0, (g.output[i] - 1) * g.strides[i] + extent - input[i]);
      g.pad_begin[i] = same_upper ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else {
      g.output[i] = ExplicitOutput(input[i], extent, g.strides[i], g.pad_begin[i], g.pad_end[i], attrs.ceil_mode);
    }
    if (g.output[i] < 1 && input[i] > 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": window ", Join(g.kernel), " (dilations ", Join(g.dilations),
           ") does not fit spatial input ", Join(input), " with pads ", Join(g.pad_begin), "+", Join(g.pad_end));
  }
  return g;
}

}  // namespace tessera
