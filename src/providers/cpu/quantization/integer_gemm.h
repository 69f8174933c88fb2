// Products of uint8 activations with constant 8-bit weights, for kernels that quantize their own float
// activations (com.microsoft DynamicQuantizeLSTM): the weights are prepared once (shifted to int8 and packed
// for oneDNN on CPUs with VNNI, zero-point corrected to int16 for the exact GEMM elsewhere; the same choice as
// MatMulInteger, docs/ARCHITECTURE.md "8-bit products").
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tessera/ep/kernel.h"

namespace tessera::cpu {

class ConstantWeightIntegerGemm {
 public:
  // b: [k x n] row-major, int8 or uint8 (copied); b_zero: one zero point or one per column.
  ConstantWeightIntegerGemm(const void* b, DataType b_type, int64_t k, int64_t n, std::vector<int32_t> b_zero);
  ~ConstantWeightIntegerGemm();

  // sums [rows x n] = (A - a_zero)(B - b_zero) with int32 accumulation, for a uint8 A [rows x k]. Thread-safe.
  void Run(KernelContext& ctx, const uint8_t* a, int64_t rows, int32_t a_zero, int32_t* sums) const;

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

 private:
  struct Impl;
  int64_t k_, n_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::cpu
