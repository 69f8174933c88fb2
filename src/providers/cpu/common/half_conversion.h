// Bulk conversion between float32 and the 16-bit float types (float16, bfloat16), rounding to nearest even.
// Float16 uses the F16C instructions where the processor has them (every x86-64 with AVX2), bfloat16 a shift
// and round the compiler vectorizes; both split large arrays over the thread pool.
#pragma once

#include <cstdint>

#include "tessera/data_type.h"
#include "tessera/ep/thread_pool.h"
#include "tessera/tensor.h"

namespace tessera::cpu {

void HalfToFloat(const Float16* in, float* out, int64_t n);
void HalfToFloat(const BFloat16* in, float* out, int64_t n);
void FloatToHalf(const float* in, Float16* out, int64_t n);
void FloatToHalf(const float* in, BFloat16* out, int64_t n);

// Whole tensors: `from` is float16 or bfloat16 (widened) or float32 (narrowed to `to`'s type); shapes must
// match. `pool` may be nullptr (runs inline).
void ConvertHalfTensor(const Tensor& from, Tensor& to, const ThreadPool* pool);

inline bool IsHalfType(DataType type) { return type == DataType::kFloat16 || type == DataType::kBFloat16; }

}  // namespace tessera::cpu
