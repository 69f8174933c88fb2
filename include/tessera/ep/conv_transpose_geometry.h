// EP SDK: the geometry of ConvTranspose shared by every EP's kernel: the attributes, and per spatial axis the input,
// kernel, strides, dilations, pads and output resolved against concrete X and W shapes (explicit pads, auto_pad,
// output_shape, output_padding).
//
// Per spatial axis: output = stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pad_begin - pad_end.
// output_padding is folded into pad_end, which may therefore be negative: the positions it appends are reached by
// no input and hold only the bias. W is [C_in][C_out / group][kernel...].
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/ep/graph.h"
#include "tessera/ep/window_geometry.h"
#include "tessera/shape.h"
#include "tessera/tensor.h"

namespace tessera {

struct ConvTransposeAttributes {
  WindowAttributes window;
  std::vector<int64_t> output_padding, output_shape;
  int64_t group = 1;
};
ConvTransposeAttributes ReadConvTransposeAttributes(const Node& node);

// All resolved to concrete values; pad_end includes output_padding (negated), see above.
struct ConvTransposeShapes {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  std::vector<int64_t> input, kernel, strides, dilations, pad_begin, pad_end, output;
  Shape y;
  size_t rank() const { return input.size(); }
};

// Throws kInvalidArgument naming `node` when X, W, the bias (may be null) and the attributes do not fit together.
ConvTransposeShapes ResolveConvTransposeShapes(const Node& node, const ConvTransposeAttributes& a, const Shape& x,
                                               const Shape& w, const Tensor* bias);

}  // namespace tessera
