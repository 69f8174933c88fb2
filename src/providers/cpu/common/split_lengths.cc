#include "tessera/ep/split_lengths.h"

#include <algorithm>
#include <numeric>

#include "tessera/status.h"

namespace tessera {

SplitRule SplitRule::Of(const Node& node) {
  SplitRule rule;
  rule.axis = node.GetInt("axis", 0);
  if (node.opset < 13) rule.attribute = node.GetInts("split");
  if (node.opset >= 18) rule.num_outputs = node.GetInt("num_outputs", 0);
  rule.input_lengths = node.opset >= 13 || node.opset < 2;  // Split-1 took them as attribute or input
  return rule;
}

std::vector<int64_t> SplitLengths(const Node& node, const Shape& input, size_t axis, int64_t outputs,
                                  const SplitRule& rule, const std::vector<int64_t>* input_lengths) {
  const int64_t dim = input[axis];
  const std::vector<int64_t>& given = input_lengths != nullptr ? *input_lengths : rule.attribute;
  const int64_t num_outputs = rule.num_outputs;
  if (!given.empty()) {
    const std::string lengths = Shape(given).ToString();
    if (num_outputs > 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": both the split input and num_outputs are given");
    if (static_cast<int64_t>(given.size()) != outputs)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split ", lengths, " has ", given.size(), " lengths for ",
           outputs, " outputs");
    for (size_t i = 0; i < given.size(); ++i)
      if (given[i] < 0)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split ", lengths, " gives output ", i,
             " the negative length ", given[i]);
    const int64_t total = std::accumulate(given.begin(), given.end(), int64_t{0});
    if (total != dim)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": split ", lengths, " sums to ", total, ", but axis ", axis,
           " of input ", input.ToString(), " has ", dim);
    return given;
  }
  if (num_outputs > 0 && num_outputs != outputs)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": num_outputs is ", num_outputs, " but the node has ", outputs,
         " outputs");
  if (num_outputs == 0 && (outputs <= 0 || dim % outputs != 0))
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": axis ", axis, " of input ", input.ToString(),
         " cannot be split into ", outputs, " equal parts");
  const int64_t part = (dim + outputs - 1) / outputs;
  std::vector<int64_t> lengths;
  for (int64_t i = 0, left = dim; i < outputs; ++i, left -= part) lengths.push_back(std::clamp<int64_t>(left, 0, part));
  return lengths;
}

}  // namespace tessera
