// EP SDK: Reshape's output shape, shared by every EP's Reshape kernel and the graph passes that derive shapes.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/ep/graph.h"
#include "tessera/shape.h"

namespace tessera {

// Resolves Reshape's requested `dims` for `input`: a 0 copies the input's dim at that position (unless
// `allow_zero`), one -1 is inferred from the element count. Throws kInvalidArgument naming `node` when the request
// has more than one -1, a 0 past the input's rank, a negative entry, or another element count than the input.
std::vector<int64_t> ReshapeTarget(const Node& node, const Shape& input, std::vector<int64_t> dims, bool allow_zero);

}  // namespace tessera
