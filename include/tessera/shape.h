// Tensor shapes. A Shape holds concrete dimensions (>= 0). Symbolic or unknown dimensions exist
// only in model metadata (ValueInfo), never in a Tensor.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace tessera {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }
  // Product of dimensions; 1 for a scalar. Throws kInvalidArgument on overflow or a negative dim.
  int64_t NumElements() const;
  // Product of dims [begin, end).
  int64_t SizeFrom(size_t begin) const;
  int64_t SizeTo(size_t end) const;
  std::string ToString() const;  // "[1,3,224,224]"

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::vector<int64_t> dims_;
};

// Normalizes a possibly negative axis against rank; throws kInvalidArgument naming `what` if out of range.
int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* what = "axis");

}  // namespace tessera
