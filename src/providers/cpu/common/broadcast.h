// Multidirectional (numpy) broadcasting for CPU elementwise kernels.
//
// Shapes are aligned at their last dimension; each dimension pair must be equal or contain a 1.
// BroadcastPlan maps an output onto N operands for fast iteration: dimensions of size 1 are dropped
// and neighbouring dimensions where every operand is either fully present or fully broadcast are
// merged, so that the innermost (collapsed) dimension is one contiguous run per operand with element
// stride 0 (broadcast) or 1. Kernels then write plain inner loops the compiler vectorizes:
//
//   BroadcastPlan<2> plan(out_shape, {&a.shape(), &b.shape()});
//   ParallelForEachSpan(pool, plan, [&](int64_t o, const std::array<int64_t, 2>& in, int64_t n) {
//     for (int64_t i = 0; i < n; ++i) out[o + i] = a[in[0] + i * plan.inner_stride(0)] + ...;
//   });
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "tessera/ep/broadcast.h"
#include "tessera/ep/graph.h"
#include "tessera/ep/thread_pool.h"
#include "tessera/shape.h"

namespace tessera::cpu {

using tessera::BroadcastShapes;
using tessera::CheckUnidirectionalBroadcast;

// Broadcasting of binary ops before opset 7 (attributes `broadcast` and `axis`): B broadcasts to A's
// shape only when broadcast = 1, either holding one element or with its dims equal to A's dims starting
// at `axis` (default: A's trailing dims). Returns B's shape padded with 1s to A's rank, so that the numpy
// machinery (BinaryBroadcast) computes the legacy result. Throws kInvalidArgument naming `node` otherwise.
Shape LegacyBroadcastOperandShape(const Node& node, const Shape& a, const Shape& b);

// Elements per parallel task and the size below which elementwise work runs on the calling thread.
inline constexpr int64_t kElementwiseGrain = 16384;
inline constexpr int64_t kElementwiseParallelThreshold = 32768;

template <size_t N>
class BroadcastPlan {
 public:
  using Offsets = std::array<int64_t, N>;

  // Every operand shape must broadcast to `out` (use BroadcastShapes first).
  BroadcastPlan(const Shape& out, const std::array<const Shape*, N>& operands);

  int64_t size() const { return size_; }
  // Element stride (0 or 1) of operand k inside one span.
  int64_t inner_stride(size_t k) const { return strides_[k].back(); }

  // Calls fn(out_offset, operand_offsets, count) for consecutive spans covering output elements
  // [begin, end). Within a span, output element out_offset + i reads operand k at
  // operand_offsets[k] + i * inner_stride(k).
  template <typename Fn>
  void ForEachSpan(int64_t begin, int64_t end, Fn&& fn) const;

 private:
  void Advance(std::vector<int64_t>& index, Offsets& offsets) const;

  std::vector<int64_t> dims_;                    // collapsed output dims, outermost first; never empty
  std::array<std::vector<int64_t>, N> strides_;  // per operand: element stride of each collapsed dim
  int64_t size_ = 0;
};

// ForEachSpan over the whole output, split across the pool when the output is large.
template <size_t N, typename Fn>
void ParallelForEachSpan(const ThreadPool& pool, const BroadcastPlan<N>& plan, Fn&& fn) {
  if (plan.size() <= kElementwiseParallelThreshold) {
    plan.ForEachSpan(0, plan.size(), fn);
    return;
  }
  pool.ParallelFor(plan.size(), kElementwiseGrain, [&](int64_t begin, int64_t end) { plan.ForEachSpan(begin, end, fn); });
}

// out = op(a, b) elementwise with broadcasting; `out_shape` must be the broadcast of both shapes.
// The stride cases are separate loops so that each one vectorizes.
template <typename A, typename B, typename O, typename Op>
void BinaryBroadcast(const ThreadPool& pool, const A* a, const Shape& a_shape, const B* b, const Shape& b_shape, O* out,
                     const Shape& out_shape, Op op) {
  const BroadcastPlan<2> plan(out_shape, {&a_shape, &b_shape});
  const bool a_contiguous = plan.inner_stride(0) != 0;
  const bool b_contiguous = plan.inner_stride(1) != 0;
  ParallelForEachSpan(pool, plan, [&](int64_t o, const std::array<int64_t, 2>& in, int64_t n) {
    const A* pa = a + in[0];
    const B* pb = b + in[1];
    O* po = out + o;
    if (a_contiguous && b_contiguous) {
      for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], pb[i]);
    } else if (b_contiguous) {
      const A x = *pa;
      for (int64_t i = 0; i < n; ++i) po[i] = op(x, pb[i]);
    } else if (a_contiguous) {
      const B y = *pb;
      for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], y);
    } else {
      std::fill(po, po + n, op(*pa, *pb));
    }
  });
}

// ---- implementation ------------------------------------------------------------------------------

template <size_t N>
BroadcastPlan<N>::BroadcastPlan(const Shape& out, const std::array<const Shape*, N>& operands) {
  size_ = out.NumElements();
  // Per output dim (size > 1): which operands are present along it, as a bit mask.
  std::vector<std::pair<int64_t, uint32_t>> merged;
  const size_t rank = out.rank();
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    uint32_t present = 0;
    for (size_t k = 0; k < N; ++k) {
      const Shape& s = *operands[k];
      const size_t lead = rank - s.rank();
      if (d >= lead && s[d - lead] != 1) present |= 1u << k;
    }
    if (!merged.empty() && merged.back().second == present) {
      merged.back().first *= out[d];
    } else {
      merged.emplace_back(out[d], present);
    }
  }
  if (merged.empty()) merged.emplace_back(1, (1u << N) - 1);  // one element: every operand "present"
  for (const auto& [dim, present] : merged) dims_.push_back(dim);
  for (size_t k = 0; k < N; ++k) {
    strides_[k].assign(merged.size(), 0);
    int64_t stride = 1;
    for (size_t d = merged.size(); d-- > 0;) {
      if (merged[d].second & (1u << k)) {
        strides_[k][d] = stride;
        stride *= merged[d].first;
      }
    }
  }
}

template <size_t N>
void BroadcastPlan<N>::Advance(std::vector<int64_t>& index, Offsets& offsets) const {
  for (size_t d = dims_.size() - 1; d-- > 0;) {
    for (size_t k = 0; k < N; ++k) offsets[k] += strides_[k][d];
    if (++index[d] < dims_[d]) return;
    index[d] = 0;
    for (size_t k = 0; k < N; ++k) offsets[k] -= dims_[d] * strides_[k][d];
  }
}

template <size_t N>
template <typename Fn>
void BroadcastPlan<N>::ForEachSpan(int64_t begin, int64_t end, Fn&& fn) const {
  if (begin >= end) return;
  const size_t last = dims_.size() - 1;
  std::vector<int64_t> index(dims_.size());
  Offsets offsets{};
  int64_t rest = begin;
  for (size_t d = dims_.size(); d-- > 0;) {
    index[d] = rest % dims_[d];
    rest /= dims_[d];
    for (size_t k = 0; k < N; ++k) offsets[k] += index[d] * strides_[k][d];
  }
  const int64_t inner = dims_[last];
  for (int64_t out = begin; out < end;) {
    const int64_t count = std::min(inner - index[last], end - out);
    fn(out, offsets, count);
    out += count;
    index[last] += count;
    if (index[last] < inner) break;  // only the final span can end inside a row
    index[last] = 0;
    for (size_t k = 0; k < N; ++k) offsets[k] += (count - inner) * strides_[k][last];
    Advance(index, offsets);
  }
}

}  // namespace tessera::cpu
