#include "providers/cpu/common/broadcast.h"

#include "tessera/status.h"

namespace tessera {

Shape BroadcastShapes(const Node& node, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    // Aligned at the last dimension; missing leading dims count as 1.
    const int64_t da = d + a.rank() >= rank ? a[d + a.rank() - rank] : 1;
    const int64_t db = d + b.rank() >= rank ? b[d + b.rank() - rank] : 1;
    if (da != db && da != 1 && db != 1) {
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input shapes ", a.ToString(), " and ", b.ToString(),
           " cannot be broadcast together (dimension ", d, " of the result: ", da, " vs ", db, ")");
    }
    dims[d] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

Shape BroadcastShapes(const Node& node, std::span<const Shape> shapes) {
  if (shapes.empty()) Fail(ErrorCode::kInvalidArgument, node.Describe(), ": needs at least one input");
  Shape result = shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) result = BroadcastShapes(node, result, shapes[i]);
  return result;
}

void CheckUnidirectionalBroadcast(const Node& node, const Shape& from, const Shape& to, const char* what) {
  bool ok = from.rank() <= to.rank();
  for (size_t d = 0; ok && d < from.rank(); ++d) {
    const int64_t dim = from[d];
    ok = dim == 1 || dim == to[d + to.rank() - from.rank()];
  }
  if (!ok) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " of shape ", from.ToString(),
         " cannot be broadcast to shape ", to.ToString());
  }
}

namespace cpu {

Shape LegacyBroadcastOperandShape(const Node& node, const Shape& a, const Shape& b) {
  if (node.GetInt("broadcast", 0) == 0) {
    if (a != b) {
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input shapes ", a.ToString(), " and ", b.ToString(),
           " differ and attribute broadcast is not 1 (before opset 7 inputs broadcast only when asked to)");
    }
    return b;
  }
  const auto rank = static_cast<int64_t>(a.rank());
  if (b.NumElements() == 1) return Shape(std::vector<int64_t>(static_cast<size_t>(rank), 1));
  const auto b_rank = static_cast<int64_t>(b.rank());
  const int64_t axis = node.GetInt("axis", rank - b_rank);
  if (axis < 0 || axis + b_rank > rank) {
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input B of shape ", b.ToString(),
         " cannot be broadcast to A of shape ", a.ToString(), " from axis ", axis);
  }
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  for (int64_t d = 0; d < b_rank; ++d) {
    const int64_t dim = b[static_cast<size_t>(d)];
    if (dim != 1 && dim != a[static_cast<size_t>(axis + d)]) {
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": input B of shape ", b.ToString(),
           " does not match A of shape ", a.ToString(), " from axis ", axis);
    }
    dims[static_cast<size_t>(axis + d)] = dim;
  }
  return Shape(std::move(dims));
}

}  // namespace cpu
}  // namespace tessera
