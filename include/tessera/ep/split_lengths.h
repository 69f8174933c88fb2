// EP SDK: Split's part lengths, shared by every EP's Split kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/ep/graph.h"
#include "tessera/shape.h"

namespace tessera {

// Split's attributes, read once from the node (kernel construction).
struct SplitRule {
  int64_t axis = 0;
  std::vector<int64_t> attribute;  // `split` before opset 13 (empty when absent)
  int64_t num_outputs = 0;         // opset 18+ (0 when absent)
  bool input_lengths = false;      // lengths may come from input 1 (opsets 1 and 13+)
  static SplitRule Of(const Node& node);
};

// The lengths along `axis` of `input` of Split's `outputs` parts: `given` (the values of input 1 when
// rule.input_lengths and the input is present; else null) or rule.attribute, else rule.num_outputs parts of
// ceil(dim / num_outputs) with the last ones smaller, else `outputs` equal parts. Throws kInvalidArgument naming
// `node` and the rule that failed: both lengths and num_outputs given, a count of lengths other than `outputs`, a
// negative length, lengths that do not sum to the dim, num_outputs other than `outputs`, a dim that equal parts do
// not divide.
std::vector<int64_t> SplitLengths(const Node& node, const Shape& input, size_t axis, int64_t outputs,
                                  const SplitRule& rule, const std::vector<int64_t>* given);

}  // namespace tessera
