// Arithmetic in float32 over float32 or float16 storage: Widen reads an element as float, Narrow<T> rounds a
// float to the element type. For CPU kernels templated on both types.
#pragma once

#include <type_traits>

#include "tessera/data_type.h"

namespace tessera::cpu {

inline float Widen(float v) { return v; }
inline float Widen(Float16 v) { return ToFloat(v); }

template <typename T>
T Narrow(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return ToFloat16(v);
}

}  // namespace tessera::cpu
