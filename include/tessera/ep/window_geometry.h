// EP SDK: sliding-window geometry shared by Conv and the pooling kernels of every EP: kernel extent, strides,
// dilations and padding (explicit `pads` or `auto_pad`) resolved against a concrete input shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ep/graph.h"

namespace tessera {

// The window attributes as written on the node (absent ones are empty / defaults).
struct WindowAttributes {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  bool ceil_mode = false;  // pooling only
};
WindowAttributes ReadWindowAttributes(const Node& node);

// Per spatial axis, all resolved to concrete values.
struct WindowGeometry {
  std::vector<int64_t> input, kernel, strides, dilations, pad_begin, pad_end, output;
  size_t rank() const { return input.size(); }
  int64_t InputSize() const;
  int64_t OutputSize() const;
  int64_t KernelSize() const;
};

// Resolves `attrs` for spatial input dims `input` and window `kernel`; throws kInvalidArgument naming
// `node` when the attributes do not fit the input (wrong lengths, empty output, bad auto_pad).
WindowGeometry ResolveWindow(const WindowAttributes& attrs, const std::vector<int64_t>& input,
                             const std::vector<int64_t>& kernel, const Node& node);

}  // namespace tessera
