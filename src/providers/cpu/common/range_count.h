// How many elements ONNX Range(start, limit, delta) produces: max(ceil((limit - start) / delta), 0), computed
// exactly for integer types. Shared by the CPU and CUDA kernels. delta must not be zero.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tessera {

template <typename T>
int64_t RangeCount(T start, T limit, T delta) {
  int64_t count;
  if constexpr (std::is_integral_v<T>) {
    const int64_t span = static_cast<int64_t>(limit) - static_cast<int64_t>(start), step = delta;
    count = span / step + (span % step != 0 && (span > 0) == (step > 0) ? 1 : 0);
  } else {
    count = static_cast<int64_t>(std::ceil((static_cast<double>(limit) - start) / delta));
  }
  return std::max<int64_t>(count, 0);
}

}  // namespace tessera
