// Row-major matrix products through cuBLASLt, with what cuBLASLt fuses into the product's own kernel:
//   out = epilogue(alpha * op(a) x op(b) + beta * c + bias)
// for a batch of products at fixed strides. A product's descriptors, layouts and algorithm are chosen once per
// shape, strides, epilogue, bias and operand alignment and cached, so a steady-state call is one
// cublasLtMatmul: no descriptor creation and no heuristic query. The algorithm is the heuristic's first proposal,
// or with provider option matmul_algo_search = EXHAUSTIVE the fastest of its first eight, timed once per shape on
// the EP and kept in the EP's tuning results and tuning cache file. In eager sessions that call is queued through the
// plan's step graphs (step_graphs.h): once the same operands come back on the same stream it is replayed as a
// captured graph, one cudaGraphLaunch (1.8 us of host time against cublasLtMatmul's 6.1 us on the H100 host).
//
// Tessera tensors are row-major and cuBLAS is column-major: out = a x b is computed as the column-major
// product out^T = b^T x a^T, which reads the same memory without any transpose. A bias of the row-major
// product's n columns is then a bias of the column-major result's rows, which is what cuBLASLt's bias epilogue
// adds.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "providers/cuda/cuda_ep.h"
#include "providers/cuda/cuda_handles.h"
#include "tessera/ep/kernel.h"

namespace tessera::cuda {

enum class LtEpilogue { kNone, kRelu, kBias, kReluBias };

struct RowMajorProduct {
  DataType type = DataType::kFloat;  // of a, b, c, bias and out (float32 or float16)
  bool float_out = false;            // c and out float32 whatever `type` is (float16 operands' float sums)
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;  // out is [m, n]; op(a) [m, k]; op(b) [k, n]
  int64_t lda = 0;  // a's row length when a is not transposed and its rows are longer than k (0: k)
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  // optional, out's shape and strides (may be out itself); scaled by beta
  void* out = nullptr;
  const void* bias = nullptr;  // n values, for kBias and kReluBias
  LtEpilogue epilogue = LtEpilogue::kNone;
  float alpha = 1.0f, beta = 0.0f;
  // Operand i of a batch starts stride elements after operand i - 1 (c uses stride_out).
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_out = 0;
};

// The cached cuBLASLt plans of one kernel (one node). Thread-safe: concurrent runs share the plans.
class LtMatmulPlans {
 public:
  LtMatmulPlans();
  ~LtMatmulPlans();

  // Queues `product` on the kernel's stream and returns true; returns false, queuing nothing, when cuBLASLt has
  // no algorithm for it (the caller then computes it another way). Throws kRuntime naming the node when a
  // cuBLASLt call fails.
  bool Run(const KernelContext& ctx, const CudaExecutionProvider& ep, const RowMajorProduct& product) const;

  // Whether Run may take the product: not empty (m, n, k > 0), no batch with a shared operand (stride 0), and a
  // bias aligned to 16 bytes.
  static bool Supports(const RowMajorProduct& product);

 private:
  struct Key;
  struct Plan;
  std::shared_ptr<const Plan> Find(const Key& key) const;
  static std::string TuningKey(const Key& key);
  size_t Choose(const KernelContext& ctx, const CudaExecutionProvider& ep, const RowMajorProduct& product,
                const Plan& plan, const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                const LibraryHandles::Lease& lease, cudaStream_t stream) const;

  mutable std::shared_mutex mutex_;  // plans_
  mutable std::vector<std::shared_ptr<const Plan>> plans_;  // oldest first, at most kMaxPlans
  static constexpr size_t kMaxPlans = 16;
};

}  // namespace tessera::cuda
