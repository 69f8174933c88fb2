// EP SDK: Split's part lengths, shared by every EP's Split kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/ep/graph.h"
#include "tessera/shape.h"

namespace tessera {

// The lengths along `axis` of `input` of Split's `outputs` parts: `given` (the split input, or the attribute before
// opset 13; empty when absent), else `num_outputs` (opset 18+; > 0) parts of ceil(dim / num_outputs) with the last
// ones smaller, else `outputs` equal parts. Throws kInvalidArgument naming `node` and the rule that failed: both
// lengths and num_outputs given, a count of lengths other than `outputs`, a negative length, lengths that do not
// sum to the dim, num_outputs other than `outputs`, a dim that equal parts do not divide.
std::vector<int64_t> SplitLengths(const Node& node, const Shape& input, size_t axis, int64_t outputs,
                                  const std::vector<int64_t>& given, int64_t num_outputs);

}  // namespace tessera
