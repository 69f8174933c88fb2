// Data movement for the CPU tensor-manipulation kernels (shape_ops.cc, tensor_ops.cc, gather.cc).
//
// Moving elements never needs their numeric meaning, only their storage: kernels dispatch on the
// element size (copied as unsigned integers of 1, 2, 4, 8 or 16 bytes, which vectorize) and on
// std::string for string tensors, which must be copied element by element.
//
// Most layout ops (Transpose, Slice, Expand, Tile, Split, DepthToSpace, ...) are one operation: fill a
// dense output from a strided view of the input. CopyStrided does that once, well: it drops unit dims,
// merges dims that are contiguous in both, copies whole rows when the innermost stride is 1, fills rows
// when it is 0 (broadcast), tiles 2-D blocks when the input's contiguous axis is not the output's
// (transposes), and spreads rows over the thread pool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tessera/data_type.h"
#include "tessera/ep/thread_pool.h"
#include "tessera/status.h"
#include "tessera/tensor.h"
#include "providers/cpu/tensor/transpose_tile.h"

namespace tessera::cpu {

// Storage of 16-byte elements (complex128).
struct Bytes16 {
  uint64_t lo, hi;
};

// Calls fn.template operator()<S>() with S the storage type of `type`: std::string for strings, else an
// unsigned integer (or Bytes16) of the element's size.
template <typename Fn>
decltype(auto) VisitStorageType(DataType type, Fn&& fn) {
  if (type == DataType::kString) return fn.template operator()<std::string>();
  switch (SizeOf(type)) {
    case 1:
      return fn.template operator()<uint8_t>();
    case 2:
      return fn.template operator()<uint16_t>();
    case 4:
      return fn.template operator()<uint32_t>();
    case 8:
      return fn.template operator()<uint64_t>();
    case 16:
      return fn.template operator()<Bytes16>();
    default:
      break;
  }
  Fail(ErrorCode::kNotImplemented, "no storage type for element type ", DataTypeName(type));
}

// Untyped element access through a storage type (Tensor::Data<T> checks the numeric type instead).
template <typename S>
const S* StorageData(const Tensor& t) {
  return static_cast<const S*>(t.raw_data());
}
template <typename S>
S* StorageData(Tensor& t) {
  return static_cast<S*>(t.raw_data());
}

// Dense row-major strides (in elements) of `dims`.
inline std::vector<int64_t> DenseStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  return strides;
}

// A strided view of a source buffer, read in row-major order of `dims`: element [i0, ..., in-1] is
// src[offset + sum(ik * strides[k])]. Strides are in elements; 0 broadcasts, negative reverses.
struct StridedView {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

// Walks a multi-index over `dims` in row-major order, starting at linear position `linear`, and tracks
// the offset sum(index[k] * strides[k]). Holds references: dims and strides must outlive it.
class Odometer {
 public:
  Odometer(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t linear)
      : dims_(dims), strides_(strides), index_(dims.size(), 0) {
    for (size_t k = dims.size(); k-- > 0;) {
      index_[k] = linear % dims[k];
      linear /= dims[k];
      offset_ += index_[k] * strides[k];
    }
  }
  int64_t offset() const { return offset_; }
  void Next() {
    for (size_t k = dims_.size(); k-- > 0;) {
      offset_ += strides_[k];
      if (++index_[k] < dims_[k]) return;
      offset_ -= strides_[k] * dims_[k];
      index_[k] = 0;
    }
  }

 private:
  const std::vector<int64_t>& dims_;
  const std::vector<int64_t>& strides_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

namespace strided_detail {

// Elements per parallel task: below this, threading costs more than it saves.
inline constexpr int64_t kElementsPerTask = 1 << 15;
// Edge of the square tiles used for transposing copies.
inline constexpr int64_t kTile = 32;

// Drops unit dims and merges neighbours that are contiguous with each other in the source (which
// includes runs of broadcast dims). The view must have no zero dim.
inline StridedView Simplify(const StridedView& view) {
  StridedView out;
  out.offset = view.offset;
  for (size_t k = 0; k < view.dims.size(); ++k) {
    if (view.dims[k] == 1) continue;
    if (!out.dims.empty() && out.strides.back() == view.strides[k] * view.dims[k]) {
      out.dims.back() *= view.dims[k];
      out.strides.back() = view.strides[k];
    } else {
      out.dims.push_back(view.dims[k]);
      out.strides.push_back(view.strides[k]);
    }
  }
  return out;
}

template <typename S>
void CopyRow(const S* src, int64_t stride, int64_t count, S* dst) {
  if (stride == 1) {
    std::copy_n(src, count, dst);
  } else if (stride == 0) {
    std::fill_n(dst, count, *src);
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i * stride];
  }
}

// Copies along the innermost dim. Tasks are ranges of output elements (not whole rows) so that a
// single long row, e.g. a contiguous copy, is still split over the pool. `view` is simplified and has
// rank >= 1.
template <typename S>
void CopyRows(const S* src, const StridedView& view, S* dst, const ThreadPool& pool) {
  const int64_t inner = view.dims.back();
  const int64_t inner_stride = view.strides.back();
  const std::vector<int64_t> outer_dims(view.dims.begin(), view.dims.end() - 1);
  const std::vector<int64_t> outer_strides(view.strides.begin(), view.strides.end() - 1);
  pool.ParallelFor(view.NumElements(), kElementsPerTask, [&](int64_t begin, int64_t end) {
    Odometer row(outer_dims, outer_strides, begin / inner);
    int64_t column = begin % inner;
    for (int64_t position = begin; position < end; row.Next()) {
      const int64_t count = std::min(inner - column, end - position);
      CopyRow(src + row.offset() + column * inner_stride, inner_stride, count, dst + position);
      position += count;
      column = 0;
    }
  });
}

// A transposing copy: the source's unit-stride axis is output dim `unit_dim`, not the innermost one.
// Copies square tiles of (unit_dim, innermost) so that both reads and writes stay within cache lines.
template <typename S>
void CopyTiles(const S* src, const StridedView& view, size_t unit_dim, S* dst, const ThreadPool& pool) {
  const size_t last = view.dims.size() - 1;
  const std::vector<int64_t> dst_strides = DenseStrides(view.dims);
  std::vector<int64_t> outer_dims, outer_src, outer_dst;
  for (size_t k = 0; k < last; ++k) {
    if (k == unit_dim) continue;
    outer_dims.push_back(view.dims[k]);
    outer_src.push_back(view.strides[k]);
    outer_dst.push_back(dst_strides[k]);
  }
  const int64_t rows = view.dims[unit_dim], cols = view.dims[last];
  const int64_t src_col_stride = view.strides[last], dst_row_stride = dst_strides[unit_dim];
  const int64_t row_blocks = (rows + kTile - 1) / kTile;
  // The inner loop walks the side with the smaller stride: a large power-of-two stride maps every
  // line of a tile to one L1 set, so the far-strided side must be the one touched once per line.
  const bool strided_writes = dst_row_stride < std::abs(src_col_stride);
  int64_t outer = 1;
  for (int64_t d : outer_dims) outer *= d;
  const int64_t grain = std::max<int64_t>(1, kElementsPerTask / (kTile * cols));
  pool.ParallelFor(outer * row_blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const Odometer src_pos(outer_dims, outer_src, task / row_blocks);
      const Odometer dst_pos(outer_dims, outer_dst, task / row_blocks);
      const int64_t r0 = (task % row_blocks) * kTile, r1 = std::min(rows, r0 + kTile);
      const S* s = src + src_pos.offset();
      S* d = dst + dst_pos.offset();
      if (sizeof(S) == 4 && src_col_stride > 0 && HasTransposeTile4()) {  // 8 x 8 blocks through registers
        for (int64_t c0 = 0; c0 < cols; c0 += kTile)
          TransposeTile4(s + r0 + c0 * src_col_stride, src_col_stride, d + r0 * dst_row_stride + c0, dst_row_stride,
                         r1 - r0, std::min(cols, c0 + kTile) - c0);
        continue;
      }
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        if (strided_writes) {
          for (int64_t c = c0; c < c1; ++c)
            for (int64_t r = r0; r < r1; ++r) d[r * dst_row_stride + c] = s[r + c * src_col_stride];
        } else {
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c) d[r * dst_row_stride + c] = s[r + c * src_col_stride];
        }
      }
    }
  });
}

}  // namespace strided_detail

// Fills dst (dense, view.NumElements() elements) from the strided view of src.
template <typename S>
void CopyStrided(const S* src, const StridedView& view, S* dst, const ThreadPool& pool) {
  if (view.NumElements() == 0) return;
  const StridedView v = strided_detail::Simplify(view);
  src += v.offset;
  if (v.dims.empty()) {
    dst[0] = src[0];
    return;
  }
  const size_t last = v.dims.size() - 1;
  if (v.strides[last] != 1 && v.strides[last] != 0) {
    for (size_t k = 0; k < last; ++k)
      if (v.strides[k] == 1) return strided_detail::CopyTiles(src, v, k, dst, pool);
  }
  strided_detail::CopyRows(src, v, dst, pool);
}

// CopyStrided between tensors of the same element type, dispatching on storage.
inline void CopyStrided(const Tensor& src, const StridedView& view, Tensor& dst, const ThreadPool& pool) {
  VisitStorageType(src.type(),
                   [&]<typename S>() { CopyStrided(StorageData<S>(src), view, StorageData<S>(dst), pool); });
}

// The identity view of a dense tensor of shape `dims`.
inline StridedView DenseView(const std::vector<int64_t>& dims) { return {dims, DenseStrides(dims), 0}; }

}  // namespace tessera::cpu
