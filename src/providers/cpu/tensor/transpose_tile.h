// The inner tile of a transposing copy of 4-byte elements (strided_copy.h CopyTiles) on AVX2: 8 x 8 blocks moved
// through registers (eight loads, a register transpose, eight stores) instead of 64 single-element moves whose
// reads stride across cache lines.
#pragma once

#include <cstdint>

namespace tessera::cpu {

// Whether the CPU runs TransposeTile4 (AVX2); false: the caller copies element by element.
bool HasTransposeTile4();

// Copies rows x cols elements of 4 bytes: dst[r * dst_row_stride + c] = src[r + c * src_col_stride] for r < rows,
// c < cols (strides in elements). Full 8 x 8 blocks go through registers, the edges element by element. Only when
// HasTransposeTile4().
void TransposeTile4(const void* src, int64_t src_col_stride, void* dst, int64_t dst_row_stride, int64_t rows,
                    int64_t cols);

}  // namespace tessera::cpu
