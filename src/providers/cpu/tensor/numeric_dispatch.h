// Numeric element types for the CPU tensor kernels: dispatch from a DataType to its C++ type, value
// conversions that understand the 16-bit float storage types, and reading of host parameter inputs
// (shapes, axes, pads, repeats, ...) as int64.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "tessera/data_type.h"
#include "tessera/ep/graph.h"
#include "tessera/status.h"
#include "tessera/tensor.h"

namespace tessera::cpu {

// Calls fn.template operator()<T>() with the C++ type of a numeric or bool `type`; other types
// (string, complex) throw kNotImplemented naming `node`.
template <typename Fn>
decltype(auto) VisitNumericType(const Node& node, DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat:
      return fn.template operator()<float>();
    case DataType::kDouble:
      return fn.template operator()<double>();
    case DataType::kFloat16:
      return fn.template operator()<Float16>();
    case DataType::kBFloat16:
      return fn.template operator()<BFloat16>();
    case DataType::kInt8:
      return fn.template operator()<int8_t>();
    case DataType::kInt16:
      return fn.template operator()<int16_t>();
    case DataType::kInt32:
      return fn.template operator()<int32_t>();
    case DataType::kInt64:
      return fn.template operator()<int64_t>();
    case DataType::kUInt8:
      return fn.template operator()<uint8_t>();
    case DataType::kUInt16:
      return fn.template operator()<uint16_t>();
    case DataType::kUInt32:
      return fn.template operator()<uint32_t>();
    case DataType::kUInt64:
      return fn.template operator()<uint64_t>();
    case DataType::kBool:
      return fn.template operator()<bool>();
    default:
      break;
  }
  Fail(ErrorCode::kNotImplemented, node.Describe(), ": element type ", DataTypeName(type), " is not supported");
}

template <typename T>
inline constexpr bool kIsHalfFloat = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// Arithmetic view of a value: 16-bit floats widen to float, everything else is itself.
template <typename T>
auto Widen(T v) {
  if constexpr (kIsHalfFloat<T>) {
    return ToFloat(v);
  } else {
    return v;
  }
}

// Converts a double (or any arithmetic value) to T, rounding 16-bit floats.
template <typename T, typename V>
T Narrow(V v) {
  if constexpr (std::is_same_v<T, Float16>) {
    return ToFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return ToBFloat16(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// All elements of a numeric tensor converted to int64 (floats truncate toward zero).
inline std::vector<int64_t> ReadAsInt64s(const Node& node, const Tensor& t) {
  return VisitNumericType(node, t.type(), [&]<typename T>() {
    std::vector<int64_t> out(static_cast<size_t>(t.NumElements()));
    const T* data = static_cast<const T*>(t.raw_data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(Widen(data[i]));
    return out;
  });
}

// An integer parameter input (int32 or int64 shape, axes, pads, ...); other types throw naming the
// node and `what`.
inline std::vector<int64_t> ReadIntParameter(const Node& node, const Tensor& t, const char* what) {
  if (t.type() != DataType::kInt64 && t.type() != DataType::kInt32)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " must be int32 or int64, got ",
         DataTypeName(t.type()));
  return ReadAsInt64s(node, t);
}

// A scalar (or one-element) numeric input converted to double.
inline double ReadScalarAsDouble(const Node& node, const Tensor& t, const char* what) {
  if (t.NumElements() != 1)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " must have one element, got shape ",
         t.shape().ToString());
  return VisitNumericType(
      node, t.type(), [&]<typename T>() { return static_cast<double>(Widen(*static_cast<const T*>(t.raw_data()))); });
}

}  // namespace tessera::cpu
