#include "tessera/ep/reshape_target.h"

#include "tessera/status.h"

namespace tessera {

std::vector<int64_t> ReshapeTarget(const Node& node, const Shape& input, std::vector<int64_t> dims, bool allow_zero) {
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (inferred >= 0)
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": shape ", Shape(dims).ToString(), " has more than one -1");
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (dims[i] == 0 && !allow_zero) {
      if (i >= input.rank())
        Fail(ErrorCode::kInvalidArgument, node.Describe(), ": shape ", Shape(dims).ToString(), " copies dim ", i,
             " (0) but the input ", input.ToString(), " has rank ", input.rank());
      dims[i] = input[i];
    }
    if (dims[i] < 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": invalid dim ", dims[i], " in shape ", Shape(dims).ToString());
    known *= dims[i];
  }
  const int64_t total = input.NumElements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot infer the -1 in shape ", Shape(dims).ToString(),
           " for input ", input.ToString(), " (", total, " elements)");
    dims[inferred] = total / known;
  } else if (known != total) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": cannot reshape input ", input.ToString(), " (", total,
         " elements) to ", Shape(dims).ToString(), " (", known, " elements)");
  }
  return dims;
}

}  // namespace tessera
