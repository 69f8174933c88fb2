#include "tessera/tensor.h"

#include <new>
#include <sstream>

#include "tessera/value.h"

namespace tessera {

namespace {

// Host allocator shared by Tensor::Allocate(type, shape): allocations made outside any session.
const AllocatorPtr& DefaultHostAllocator() {
  static const AllocatorPtr allocator = CreateHostAllocator();
  return allocator;
}

}  // namespace

Tensor Tensor::Allocate(DataType type, Shape shape, const AllocatorPtr& allocator) {
  if (type == DataType::kUndefined) Fail(ErrorCode::kInvalidArgument, "cannot allocate a tensor of undefined type");
  Tensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.info_ = allocator->Info();
  const int64_t count = t.shape_.NumElements();
  if (static_cast<uint64_t>(count) > (uint64_t{1} << 62) / SizeOf(type))
    Fail(ErrorCode::kInvalidArgument, "tensor of shape ", t.shape_.ToString(), " is too large");
  const size_t bytes = static_cast<size_t>(count) * SizeOf(type);
  void* p = allocator->Allocate(bytes);
  if (type == DataType::kString) {
    if (!t.info_.IsHostReadable()) {
      allocator->Free(p);
      Fail(ErrorCode::kInvalidArgument, "string tensors must live in host memory, not ", t.info_.ToString());
    }
    auto* strings = static_cast<std::string*>(p);
    for (int64_t i = 0; i < count; ++i) new (strings + i) std::string();
    t.buffer_ = std::shared_ptr<void>(p, [allocator, count](void* q) {
      auto* s = static_cast<std::string*>(q);
      for (int64_t i = 0; i < count; ++i) s[i].~basic_string();
      allocator->Free(q);
    });
  } else {
    t.buffer_ = std::shared_ptr<void>(p, [allocator](void* q) { allocator->Free(q); });
  }
  t.data_ = p;
  return t;
}

Tensor Tensor::Allocate(DataType type, Shape shape) { return Allocate(type, std::move(shape), DefaultHostAllocator()); }

Tensor Tensor::Wrap(DataType type, Shape shape, void* data, size_t bytes, const MemoryInfo& where) {
  Tensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.info_ = where;
  const size_t needed = static_cast<size_t>(t.shape_.NumElements()) * SizeOf(type);
  if (bytes < needed)
    Fail(ErrorCode::kInvalidArgument, "Tensor::Wrap: buffer of ", bytes, " bytes is smaller than the ", needed,
         " bytes that ", DataTypeName(type), t.shape_.ToString(), " needs");
  if (data == nullptr && needed > 0) Fail(ErrorCode::kInvalidArgument, "Tensor::Wrap: null data pointer");
  if (type == DataType::kString && !where.IsHostReadable())
    Fail(ErrorCode::kInvalidArgument, "string tensors must live in host memory");
  t.buffer_ = std::shared_ptr<void>(data, [](void*) {});
  t.data_ = data;
  t.borrowed_ = true;
  return t;
}

Tensor Tensor::Share(DataType type, Shape shape, std::shared_ptr<void> owner, void* data, size_t bytes,
                     const MemoryInfo& where) {
  if (type == DataType::kString || type == DataType::kUndefined)
    Fail(ErrorCode::kInvalidArgument, "Tensor::Share: element type ", DataTypeName(type), " cannot share a buffer");
  Tensor t = Wrap(type, std::move(shape), data, bytes, where);
  if (owner == nullptr) Fail(ErrorCode::kInvalidArgument, "Tensor::Share: no owner");
  if (reinterpret_cast<uintptr_t>(data) % SizeOf(type) != 0)
    Fail(ErrorCode::kInvalidArgument, "Tensor::Share: data is not aligned to its ", SizeOf(type), "-byte elements");
  t.buffer_ = std::shared_ptr<void>(std::move(owner), data);
  t.borrowed_ = false;
  return t;
}

template <>
Tensor Tensor::FromVector<bool>(Shape shape, const std::vector<bool>& values) {
  Tensor t = Allocate(DataType::kBool, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.NumElements())
    Fail(ErrorCode::kInvalidArgument, "FromVector: ", values.size(), " values for shape ", t.shape().ToString());
  bool* out = t.Data<bool>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  if (shape.NumElements() != NumElements())
    Fail(ErrorCode::kInvalidArgument, "cannot view ", shape_.ToString(), " as ", shape.ToString(),
         ": element counts differ");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

void Tensor::CheckType(DataType expected) const {
  if (type_ != expected)
    Fail(ErrorCode::kInvalidArgument, "tensor holds ", DataTypeName(type_), ", accessed as ", DataTypeName(expected));
  if (!info_.IsHostReadable())
    Fail(ErrorCode::kInvalidArgument, "tensor in ", info_.ToString(), " is not host-readable; copy it to the host first");
}

Tensor Tensor::CloneOnHost() const {
  if (!info_.IsHostReadable()) Fail(ErrorCode::kInvalidArgument, "CloneOnHost: ", Describe(), " is not host-readable");
  Tensor out = Allocate(type_, shape_);
  if (type_ == DataType::kString) {
    const auto* s = static_cast<const std::string*>(data_);
    auto* d = static_cast<std::string*>(out.data_);
    for (int64_t i = 0; i < NumElements(); ++i) d[i] = s[i];
  } else if (SizeInBytes() > 0) {
    std::memcpy(out.data_, data_, SizeInBytes());
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) { return os << tensor.Describe(); }

std::string Tensor::Describe() const {
  if (!defined()) return "undefined tensor";
  std::ostringstream os;
  os << DataTypeName(type_) << shape_.ToString() << " on " << info_.ToString();
  return os.str();
}

const Tensor& Value::tensor() const {
  if (!is_tensor()) Fail(ErrorCode::kInvalidArgument, "value is not a tensor");
  return std::get<Tensor>(v_);
}
Tensor& Value::tensor() {
  if (!is_tensor()) Fail(ErrorCode::kInvalidArgument, "value is not a tensor");
  return std::get<Tensor>(v_);
}
const TensorSequence& Value::sequence() const {
  if (!is_sequence()) Fail(ErrorCode::kInvalidArgument, "value is not a sequence");
  return std::get<TensorSequence>(v_);
}
TensorSequence& Value::sequence() {
  if (!is_sequence()) Fail(ErrorCode::kInvalidArgument, "value is not a sequence");
  return std::get<TensorSequence>(v_);
}

}  // namespace tessera
