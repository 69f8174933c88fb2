#include "providers/cpu/quantization/quantize_common.h"

#include <cstdlib>

#include "providers/cpu/common/target_clones.h"
#include "tessera/status.h"

namespace tessera::cpu {

std::vector<float> ReadScales(const Node& node, const Tensor& t, const char* what) {
  std::vector<float> out(static_cast<size_t>(t.NumElements()));
  switch (t.type()) {
    case DataType::kFloat:
      std::copy_n(t.Data<float>(), out.size(), out.begin());
      break;
    case DataType::kFloat16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = ToFloat(t.Data<Float16>()[i]);
      break;
    case DataType::kBFloat16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = ToFloat(t.Data<BFloat16>()[i]);
      break;
    default:
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " must be float, float16 or bfloat16, got ",
           DataTypeName(t.type()));
  }
  return out;
}

std::vector<int32_t> ReadZeroPoints(const Node& node, const Tensor* t, const char* what) {
  if (!t) return {0};
  std::vector<int32_t> out(static_cast<size_t>(t->NumElements()));
  auto widen = [&](const auto* data) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(data[i]);
  };
  switch (t->type()) {
    case DataType::kInt8:
      widen(t->Data<int8_t>());
      break;
    case DataType::kUInt8:
      widen(t->Data<uint8_t>());
      break;
    case DataType::kInt16:
      widen(t->Data<int16_t>());
      break;
    case DataType::kUInt16:
      widen(t->Data<uint16_t>());
      break;
    case DataType::kInt32:
      widen(t->Data<int32_t>());
      break;
    default:
      Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " has unsupported type ", DataTypeName(t->type()));
  }
  return out;
}

bool CheckChannelParameter(const Node& node, const Shape& shape, int64_t channels, const char* what,
                           const char* channel_name) {
  const int64_t count = shape.NumElements();
  if (shape.rank() <= 1 && count == 1) return false;
  if (shape.rank() == 1 && count == channels) return true;
  Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " ", shape.ToString(),
       " must be a scalar or a 1-D tensor with one value per ", channel_name, " (", channels, ")");
}

namespace {

template <typename Q>
inline void QuantizeLoop(const float* x, int64_t n, float scale, float zero_point, Q* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = QuantizeValue<Q>(x[i] / scale, zero_point);
}

template <typename Q>
inline void RequantizeLoop(const int32_t* sums, int64_t n, int32_t offset, float multiplier, float zero_point, Q* y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = QuantizeValue<Q>(static_cast<float>(sums[i] + offset) * multiplier, zero_point);
}

}  // namespace

// Each function marked so is also built for AVX-512 and AVX2; the loader picks the best clone for the CPU. The
// targets name instruction-set levels, not CPU models: "arch=skylake-avx512" is chosen on Intel's AVX-512 CPUs only
// (AMD's Zen 4 / Zen 5 took the AVX2 clone).
#define TESSERA_SIMD_CLONES TESSERA_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")

TESSERA_SIMD_CLONES void QuantizeSpan(const float* x, int64_t n, float scale, float zero_point, int8_t* y) {
  QuantizeLoop(x, n, scale, zero_point, y);
}
TESSERA_SIMD_CLONES void QuantizeSpan(const float* x, int64_t n, float scale, float zero_point, uint8_t* y) {
  QuantizeLoop(x, n, scale, zero_point, y);
}
TESSERA_SIMD_CLONES void QuantizeSpan(const float* x, int64_t n, float scale, float zero_point, int16_t* y) {
  QuantizeLoop(x, n, scale, zero_point, y);
}
TESSERA_SIMD_CLONES void QuantizeSpan(const float* x, int64_t n, float scale, float zero_point, uint16_t* y) {
  QuantizeLoop(x, n, scale, zero_point, y);
}
TESSERA_SIMD_CLONES void RequantizeSpan(const int32_t* sums, int64_t n, int32_t offset, float multiplier,
                                        float zero_point, int8_t* y) {
  RequantizeLoop(sums, n, offset, multiplier, zero_point, y);
}
TESSERA_SIMD_CLONES void RequantizeSpan(const int32_t* sums, int64_t n, int32_t offset, float multiplier,
                                        float zero_point, uint8_t* y) {
  RequantizeLoop(sums, n, offset, multiplier, zero_point, y);
}

bool DnnlInt8IsExact() {
#if defined(__x86_64__) || defined(__i386__)
  // TESSERA_CPU_EXACT_INT8_GEMM=1 takes the int16 GEMM everywhere (how tests cover that path on VNNI hosts).
  static const bool vnni = __builtin_cpu_supports("avx512vnni") && !std::getenv("TESSERA_CPU_EXACT_INT8_GEMM");
  return vnni;
#else
  return false;
#endif
}

void ForRange(const ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool)
    pool->ParallelFor(n, grain, fn);
  else if (n > 0)
    fn(0, n);
}

#undef TESSERA_SIMD_CLONES

}  // namespace tessera::cpu
