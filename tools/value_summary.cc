#include "value_summary.h"

#include <cmath>
#include <limits>

#include "npy.h"

namespace tessera::cli {
namespace {

template <typename T, typename ToDouble>
TensorStats StatsOf(const Tensor& tensor, ToDouble to_double) {
  const T* data = static_cast<const T*>(tensor.raw_data());
  const int64_t n = tensor.NumElements();
  TensorStats stats;
  if (n == 0) return stats;
  stats.numeric = true;
  stats.min = std::numeric_limits<double>::infinity();
  stats.max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = to_double(data[i]);
    sum += v;
    if (v < stats.min) stats.min = v;
    if (v > stats.max) stats.max = v;
  }
  stats.mean = sum / static_cast<double>(n);
  return stats;
}

template <typename T>
TensorStats PlainStats(const Tensor& tensor) {
  return StatsOf<T>(tensor, [](T v) { return static_cast<double>(v); });
}

}  // namespace

TensorStats ComputeStats(const Tensor& tensor) {
  switch (tensor.type()) {
    case DataType::kFloat: return PlainStats<float>(tensor);
    case DataType::kDouble: return PlainStats<double>(tensor);
    case DataType::kFloat16: return StatsOf<Float16>(tensor, [](Float16 v) { return double{ToFloat(v)}; });
    case DataType::kBFloat16: return StatsOf<BFloat16>(tensor, [](BFloat16 v) { return double{ToFloat(v)}; });
    case DataType::kInt8: return PlainStats<int8_t>(tensor);
    case DataType::kInt16: return PlainStats<int16_t>(tensor);
    case DataType::kInt32: return PlainStats<int32_t>(tensor);
    case DataType::kInt64: return PlainStats<int64_t>(tensor);
    case DataType::kUInt8: return PlainStats<uint8_t>(tensor);
    case DataType::kUInt16: return PlainStats<uint16_t>(tensor);
    case DataType::kUInt32: return PlainStats<uint32_t>(tensor);
    case DataType::kUInt64: return PlainStats<uint64_t>(tensor);
    case DataType::kBool: return PlainStats<bool>(tensor);
    default: return {};
  }
}

std::string SafeFileName(const std::string& name) {
  std::string safe = name.empty() ? "output" : name;
  for (char& c : safe) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (safe.front() == '.') safe.front() = '_';
  return safe;
}

void WriteValueAsNpy(const std::filesystem::path& dir, const std::string& name, const Value& value) {
  if (value.is_tensor()) {
    WriteNpy(dir / (SafeFileName(name) + ".npy"), value.tensor());
  } else if (value.is_sequence()) {
    const TensorSequence& sequence = value.sequence();
    for (size_t i = 0; i < sequence.size(); ++i)
      WriteNpy(dir / (SafeFileName(name) + "_" + std::to_string(i) + ".npy"), sequence[i]);
  }
}

}  // namespace tessera::cli
