#include "tessera/shape.h"

#include <limits>
#include <sstream>

#include "tessera/status.h"

namespace tessera {

namespace {
int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) {
    const int64_t d = dims[i];
    if (d < 0) Fail(ErrorCode::kInvalidArgument, "negative dimension ", d, " in shape");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      Fail(ErrorCode::kInvalidArgument, "shape element count overflows int64");
    n *= d;
  }
  return n;
}
}  // namespace

int64_t Shape::NumElements() const { return Product(dims_, 0, dims_.size()); }
int64_t Shape::SizeFrom(size_t begin) const { return Product(dims_, begin, dims_.size()); }
int64_t Shape::SizeTo(size_t end) const { return Product(dims_, 0, end); }

std::string Shape::ToString() const {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < dims_.size(); ++i) os << (i ? "," : "") << dims_[i];
  os << ']';
  return os.str();
}

int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    Fail(ErrorCode::kInvalidArgument, what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace tessera
