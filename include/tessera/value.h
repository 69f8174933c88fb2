// Value: what flows along a graph edge. ONNX values are tensors, sequences of tensors, or optionals
// (which hold a tensor, a sequence, or nothing).
#pragma once

#include <memory>
#include <variant>
#include <vector>

#include "tessera/tensor.h"

namespace tessera {

using TensorSequence = std::vector<Tensor>;

class Value {
 public:
  enum class Kind { kNone, kTensor, kSequence };

  Value() = default;  // kNone: an absent optional, or an unset slot
  Value(Tensor t) : v_(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  Value(TensorSequence s) : v_(std::move(s)) {}  // NOLINT(google-explicit-constructor)

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_tensor() const { return kind() == Kind::kTensor; }
  bool is_sequence() const { return kind() == Kind::kSequence; }
  // Throw kInvalidArgument when the value has another kind.
  const Tensor& tensor() const;
  Tensor& tensor();
  const TensorSequence& sequence() const;
  TensorSequence& sequence();

 private:
  std::variant<std::monostate, Tensor, TensorSequence> v_;
};

}  // namespace tessera
