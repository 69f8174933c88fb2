// EP SDK: multidirectional (numpy) broadcasting of shapes, shared by the elementwise kernels of every EP.
#pragma once

#include <span>

#include "tessera/ep/graph.h"
#include "tessera/shape.h"

namespace tessera {

// The broadcast of `a` and `b`; throws kInvalidArgument naming `node` and both shapes when they are
// incompatible.
Shape BroadcastShapes(const Node& node, const Shape& a, const Shape& b);
// The broadcast of all `shapes` (at least one).
Shape BroadcastShapes(const Node& node, std::span<const Shape> shapes);
// Checks that `from` broadcasts to `to` without changing `to` (unidirectional, e.g. PRelu's slope);
// throws kInvalidArgument naming `node`, `what` and both shapes otherwise.
void CheckUnidirectionalBroadcast(const Node& node, const Shape& from, const Shape& to, const char* what);

}  // namespace tessera
