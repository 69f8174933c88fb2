#include "tessera/data_type.h"

#include <bit>
#include <cstring>
#include <string>

#include "tessera/status.h"

namespace tessera {

size_t SizeOf(DataType type) {
  switch (type) {
    case DataType::kFloat: case DataType::kInt32: case DataType::kUInt32: return 4;
    case DataType::kDouble: case DataType::kInt64: case DataType::kUInt64: case DataType::kComplex64: return 8;
    case DataType::kComplex128: return 16;
    case DataType::kInt16: case DataType::kUInt16: case DataType::kFloat16: case DataType::kBFloat16: return 2;
    case DataType::kInt8: case DataType::kUInt8: case DataType::kBool: return 1;
    case DataType::kString: return sizeof(std::string);
    case DataType::kUndefined: break;
  }
  Fail(ErrorCode::kInvalidArgument, "element type ", static_cast<int>(type), " has no size");
}

const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kUndefined: return "undefined";
    case DataType::kFloat: return "float";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kDouble: return "double";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kComplex64: return "complex64";
    case DataType::kComplex128: return "complex128";
    case DataType::kBFloat16: return "bfloat16";
  }
  return "unknown";
}

bool IsFloatingPoint(DataType type) {
  return type == DataType::kFloat || type == DataType::kDouble || type == DataType::kFloat16 ||
         type == DataType::kBFloat16;
}

bool IsKnownDataType(int32_t onnx_type) { return onnx_type >= 1 && onnx_type <= 16; }

float ToFloat(Float16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exponent = (h.bits >> 10) & 0x1fu;
  uint32_t mantissa = h.bits & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf / nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // zero
  } else {  // subnormal: normalize
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

Float16 ToFloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return {static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u))};
  }
  if (abs >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // rounds to inf
  if (abs < 0x38800000u) {  // subnormal half or zero: round to nearest even via float arithmetic
    const float magnitude = std::bit_cast<float>(abs) + 0.5f;  // 0.5 = 2^-1 aligns the half subnormal lsb
    return {static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(magnitude) - 0x3f000000u))};
  }
  // Normal: rebias exponent and round to nearest even on the 13 dropped bits.
  const uint32_t mantissa_odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xc8000fffu + mantissa_odd;  // -(112 << 23) + 0xfff
  return {static_cast<uint16_t>(sign | (rounded >> 13))};
}

float ToFloat(BFloat16 b) { return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16); }

BFloat16 ToBFloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((x >> 16) | 0x40u)};  // quiet nan
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return {static_cast<uint16_t>((x + rounding) >> 16)};
}

}  // namespace tessera
