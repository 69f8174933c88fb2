// Tensor: element type + shape + a buffer in one memory space.
//
// Ownership: a Tensor either owns its buffer (allocated from an Allocator and returned to it when the
// last Tensor sharing it is destroyed) or borrows caller memory (Wrap), which must stay valid for as
// long as any Tensor, binding or session output refers to it. Copying a Tensor shares the buffer; it
// never copies data (use CopyTensors or Clone for that). String tensors live only in host memory.
#pragma once

#include <cstring>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/allocator.h"
#include "tessera/data_type.h"
#include "tessera/shape.h"
#include "tessera/status.h"

namespace tessera {

class Tensor {
 public:
  Tensor() = default;  // an empty tensor: !defined()

  // Allocates shape.NumElements() elements from `allocator` (contents uninitialized, strings empty).
  static Tensor Allocate(DataType type, Shape shape, const AllocatorPtr& allocator);
  // Allocates on the host.
  static Tensor Allocate(DataType type, Shape shape);
  // Wraps caller memory without copying. `bytes` must be >= NumElements * SizeOf(type).
  static Tensor Wrap(DataType type, Shape shape, void* data, size_t bytes, const MemoryInfo& where);
  // Owns memory held by `owner` without copying: `data` (at least NumElements * SizeOf(type) bytes, aligned to
  // the element size) stays valid while `owner` lives, and `owner` is released with the last Tensor sharing it.
  // Not a string type.
  static Tensor Share(DataType type, Shape shape, std::shared_ptr<void> owner, void* data, size_t bytes,
                      const MemoryInfo& where);
  // A host tensor holding a copy of `values`.
  template <typename T>
  static Tensor FromVector(Shape shape, const std::vector<T>& values);
  // A view sharing this tensor's buffer with another shape of the same element count.
  Tensor Reshaped(Shape shape) const;

  bool defined() const { return type_ != DataType::kUndefined; }
  DataType type() const { return type_; }
  const Shape& shape() const { return shape_; }
  const MemoryInfo& memory_info() const { return info_; }
  int64_t NumElements() const { return shape_.NumElements(); }
  size_t SizeInBytes() const { return static_cast<size_t>(NumElements()) * SizeOf(type_); }
  // True when this tensor borrows caller memory.
  bool is_borrowed() const { return borrowed_; }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  // Typed host access; throws kInvalidArgument if T mismatches or the memory is not host-readable.
  template <typename T>
  T* Data();
  template <typename T>
  const T* Data() const;
  template <typename T>
  std::span<const T> Span() const { return {Data<T>(), static_cast<size_t>(NumElements())}; }
  template <typename T>
  std::vector<T> ToVector() const { auto s = Span<T>(); return {s.begin(), s.end()}; }

  // The shared buffer handle (keeps the memory alive); used by aliasing kernels.
  const std::shared_ptr<void>& buffer() const { return buffer_; }

  // Deep copy to host memory (the source must be host-readable; device tensors go through CopyTensors).
  Tensor CloneOnHost() const;
  std::string Describe() const;  // "float[1,3,224,224] on Cpu"

 private:
  void CheckType(DataType expected) const;
  DataType type_ = DataType::kUndefined;
  Shape shape_;
  MemoryInfo info_;
  std::shared_ptr<void> buffer_;
  void* data_ = nullptr;
  bool borrowed_ = false;
};

template <typename T>
T* Tensor::Data() {
  CheckType(DataTypeOf<T>());
  return static_cast<T*>(data_);
}
template <typename T>
const T* Tensor::Data() const {
  CheckType(DataTypeOf<T>());
  return static_cast<const T*>(data_);
}
template <typename T>
Tensor Tensor::FromVector(Shape shape, const std::vector<T>& values) {
  Tensor t = Allocate(DataTypeOf<T>(), std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.NumElements())
    Fail(ErrorCode::kInvalidArgument, "FromVector: ", values.size(), " values for shape ", t.shape().ToString());
  T* out = t.Data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}
// std::vector<bool> is bit-packed: provide the bool overload explicitly.
template <>
Tensor Tensor::FromVector<bool>(Shape shape, const std::vector<bool>& values);

// Writes tensor.Describe(); error-message parts take the tensor itself so that success paths build no string.
std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

}  // namespace tessera
