// Element types. Values match onnx.TensorProto.DataType so that conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

// Bytes per element; for kString this is sizeof(std::string) (string tensors live on the host as
// arrays of std::string). Throws for kUndefined.
size_t SizeOf(DataType type);
// "float", "int64", ... as ONNX names them in type strings ("tensor(float)").
const char* DataTypeName(DataType type);
bool IsFloatingPoint(DataType type);
bool IsKnownDataType(int32_t onnx_type);

// 16-bit float storage types (conversion helpers in data_type.cc).
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
float ToFloat(Float16 h);
float ToFloat(BFloat16 b);
Float16 ToFloat16(float f);
BFloat16 ToBFloat16(float f);

template <typename T>
constexpr DataType DataTypeOf();
template <> constexpr DataType DataTypeOf<float>() { return DataType::kFloat; }
template <> constexpr DataType DataTypeOf<double>() { return DataType::kDouble; }
template <> constexpr DataType DataTypeOf<int8_t>() { return DataType::kInt8; }
template <> constexpr DataType DataTypeOf<int16_t>() { return DataType::kInt16; }
template <> constexpr DataType DataTypeOf<int32_t>() { return DataType::kInt32; }
template <> constexpr DataType DataTypeOf<int64_t>() { return DataType::kInt64; }
template <> constexpr DataType DataTypeOf<uint8_t>() { return DataType::kUInt8; }
template <> constexpr DataType DataTypeOf<uint16_t>() { return DataType::kUInt16; }
template <> constexpr DataType DataTypeOf<uint32_t>() { return DataType::kUInt32; }
template <> constexpr DataType DataTypeOf<uint64_t>() { return DataType::kUInt64; }
template <> constexpr DataType DataTypeOf<bool>() { return DataType::kBool; }
template <> constexpr DataType DataTypeOf<Float16>() { return DataType::kFloat16; }
template <> constexpr DataType DataTypeOf<BFloat16>() { return DataType::kBFloat16; }
template <> constexpr DataType DataTypeOf<std::string>() { return DataType::kString; }

}  // namespace tessera
