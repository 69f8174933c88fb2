#include "value_compare.h"

#include <cmath>
#include <sstream>

namespace tessera::conformance {
namespace {

struct Mismatch {
  int64_t count = 0;
  int64_t first_index = -1;
  std::string first_expected, first_actual;
  double max_abs_diff = 0;
};

template <typename T>
std::string ToText(const T& v) {
  std::ostringstream os;
  os.precision(9);
  if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>)
    os << static_cast<int>(v);
  else
    os << v;
  return os.str();
}

void Record(Mismatch& m, int64_t index, const std::string& expected, const std::string& actual) {
  if (m.count++ == 0) {
    m.first_index = index;
    m.first_expected = expected;
    m.first_actual = actual;
  }
}

bool Close(double expected, double actual, Tolerance tol) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return expected == actual;
  return std::fabs(actual - expected) <= tol.atol + tol.rtol * std::fabs(expected);
}

// Elements converted to double by `to_double` and compared with tolerance.
template <typename T, typename ToDouble>
Mismatch CompareFloating(const Tensor& expected, const Tensor& actual, Tolerance tol, ToDouble to_double) {
  const T* e = static_cast<const T*>(expected.raw_data());
  const T* a = static_cast<const T*>(actual.raw_data());
  Mismatch m;
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    const double ev = to_double(e[i]), av = to_double(a[i]);
    if (Close(ev, av, tol)) continue;
    Record(m, i, ToText(ev), ToText(av));
    if (std::isfinite(ev) && std::isfinite(av)) m.max_abs_diff = std::max(m.max_abs_diff, std::fabs(av - ev));
  }
  return m;
}

template <typename T>
Mismatch CompareExact(const Tensor& expected, const Tensor& actual) {
  const T* e = static_cast<const T*>(expected.raw_data());
  const T* a = static_cast<const T*>(actual.raw_data());
  Mismatch m;
  for (int64_t i = 0; i < expected.NumElements(); ++i)
    if (!(e[i] == a[i])) Record(m, i, ToText(e[i]), ToText(a[i]));
  return m;
}

// Complex numbers compare as their (real, imaginary) components.
template <typename T>
Mismatch CompareComplex(const Tensor& expected, const Tensor& actual, Tolerance tol) {
  const T* e = static_cast<const T*>(expected.raw_data());
  const T* a = static_cast<const T*>(actual.raw_data());
  Mismatch m;
  for (int64_t i = 0; i < 2 * expected.NumElements(); ++i)
    if (!Close(e[i], a[i], tol)) Record(m, i / 2, ToText(e[i]), ToText(a[i]));
  return m;
}

Mismatch CompareElements(const Tensor& expected, const Tensor& actual, Tolerance tol) {
  auto plain = [](auto v) { return static_cast<double>(v); };
  switch (expected.type()) {
    case DataType::kFloat: return CompareFloating<float>(expected, actual, tol, plain);
    case DataType::kDouble: return CompareFloating<double>(expected, actual, tol, plain);
    case DataType::kFloat16:
      return CompareFloating<Float16>(expected, actual, tol, [](Float16 v) { return double{ToFloat(v)}; });
    case DataType::kBFloat16:
      return CompareFloating<BFloat16>(expected, actual, tol, [](BFloat16 v) { return double{ToFloat(v)}; });
    case DataType::kInt8: return CompareExact<int8_t>(expected, actual);
    case DataType::kInt16: return CompareExact<int16_t>(expected, actual);
    case DataType::kInt32: return CompareExact<int32_t>(expected, actual);
    case DataType::kInt64: return CompareExact<int64_t>(expected, actual);
    case DataType::kUInt8: return CompareExact<uint8_t>(expected, actual);
    case DataType::kUInt16: return CompareExact<uint16_t>(expected, actual);
    case DataType::kUInt32: return CompareExact<uint32_t>(expected, actual);
    case DataType::kUInt64: return CompareExact<uint64_t>(expected, actual);
    case DataType::kBool: return CompareExact<bool>(expected, actual);
    case DataType::kString: return CompareExact<std::string>(expected, actual);
    case DataType::kComplex64: return CompareComplex<float>(expected, actual, tol);
    case DataType::kComplex128: return CompareComplex<double>(expected, actual, tol);
    case DataType::kUndefined: break;
  }
  return {};
}

std::string CompareTensors(const std::string& name, const Tensor& expected, const Tensor& actual, Tolerance tol) {
  std::ostringstream os;
  if (expected.type() != actual.type()) {
    os << "output '" << name << "': type " << DataTypeName(actual.type()) << ", expected "
       << DataTypeName(expected.type());
    return os.str();
  }
  if (expected.shape() != actual.shape()) {
    os << "output '" << name << "': shape " << actual.shape().ToString() << ", expected "
       << expected.shape().ToString();
    return os.str();
  }
  if (!actual.memory_info().IsHostReadable()) return "output '" + name + "' is not in host memory";
  const Mismatch m = CompareElements(expected, actual, tol);
  if (m.count == 0) return "";
  os << "output '" << name << "': " << m.count << " of " << expected.NumElements() << " elements differ; first at "
     << m.first_index << ": got " << m.first_actual << ", expected " << m.first_expected;
  if (m.max_abs_diff > 0) os << " (max abs diff " << m.max_abs_diff << ")";
  return os.str();
}

const char* KindName(const Value& v) { return v.is_none() ? "none" : v.is_tensor() ? "tensor" : "sequence"; }

}  // namespace

std::string CompareValues(const std::string& name, const Value& expected, const Value& actual, Tolerance tolerance) {
  if (expected.kind() != actual.kind())
    return "output '" + name + "': got a " + KindName(actual) + ", expected a " + KindName(expected);
  if (expected.is_tensor()) return CompareTensors(name, expected.tensor(), actual.tensor(), tolerance);
  if (expected.is_sequence()) {
    const TensorSequence& e = expected.sequence();
    const TensorSequence& a = actual.sequence();
    if (e.size() != a.size())
      return "output '" + name + "': sequence of " + std::to_string(a.size()) + ", expected " +
             std::to_string(e.size());
    for (size_t i = 0; i < e.size(); ++i) {
      std::string diff = CompareTensors(name + "[" + std::to_string(i) + "]", e[i], a[i], tolerance);
      if (!diff.empty()) return diff;
    }
  }
  return "";
}

}  // namespace tessera::conformance
