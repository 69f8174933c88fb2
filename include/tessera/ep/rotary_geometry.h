// EP SDK: the geometry of RotaryEmbedding (ai.onnx opset 23 and ONNX Runtime's com.microsoft contrib op), shared by
// the kernels of every EP: which inputs are which in each domain, the checks of their shapes, and the element
// strides of X's heads and tokens.
//
// Semantics (both domains): the first `rot` features of every head are rotated by the angle of the token's
// position: with c, s the cached cosine and sine of that position and (x1, x2) the feature pairs (the two halves of
// the rotated span, or even/odd features when `interleaved`), out1 = c*x1 - s*x2 and out2 = s*x1 + c*x2; the
// remaining features pass through. X is [batch, seq, hidden] (3-D: heads from `num_heads`) or [batch, heads, seq,
// head_size] (4-D). Inputs:
//   ai.onnx:       X, cos_cache, sin_cache, position_ids?  -- with position_ids [batch, seq] the caches are
//                  [max_position, rot/2] rows picked per token; without them [batch, seq, rot/2].
//   com.microsoft: X, position_ids, cos_cache, sin_cache   -- position_ids [batch, seq], or one value: the first
//                  position of every sequence (token s sits at position_ids[0] + s); caches [max_position, rot/2].
#pragma once

#include <cstdint>

#include "tessera/ep/graph.h"
#include "tessera/ep/kernel.h"
#include "tessera/tensor.h"

namespace tessera {

// The KernelDefs every EP registers its RotaryEmbedding kernels under (float32, float16, bfloat16 X; an EP that
// computes fewer types narrows input_types): ai.onnx since 23, com.microsoft since 1.
KernelDef RotaryEmbeddingKernelDef(bool contrib);

struct RotaryAttributes {
  bool contrib = false;      // com.microsoft's input order and position forms
  bool interleaved = false;  // pairs are (2j, 2j+1) instead of (j, j + rot/2)
  int64_t num_heads = 0;     // 0: absent
  int64_t rotary_dim = 0;    // 0: the whole head
};

// Reads and checks the attributes (com.microsoft's scale must be 1 and is_packed_batching 0); throws naming the node.
RotaryAttributes ReadRotaryAttributes(const Node& node);

// Input indices of the operands in the node's domain (positions: -1 when the domain has none at that index).
struct RotaryInputs {
  size_t cos = 1, sin = 2;
  int positions = 3;  // optional in ai.onnx, required in com.microsoft
};
RotaryInputs RotaryInputIndices(const RotaryAttributes& attributes);

enum class RotaryPositions {
  kNone,       // no position_ids: cache row = b * seq + s
  kPerToken,   // position_ids [batch, seq]: cache row = position_ids[b, s]
  kFirstOnly,  // com.microsoft, one value: cache row = position_ids[0] + s
};

struct RotaryGeometry {
  int64_t batch = 0, heads = 0, seq = 0, head_size = 0, rot = 0;
  int64_t batch_stride = 0, head_stride = 0, token_stride = 0;  // element strides of X (and of the output)
  RotaryPositions positions = RotaryPositions::kNone;
  int64_t max_position = 0;  // the caches' rows with position_ids
};

// Checks X, the caches (X's type, last dim rot/2, rows as the position form needs) and position_ids (int32 or int64
// of the form's shape) and computes the geometry; throws kInvalidArgument naming the node and the operand. The
// position values themselves are not read: a host kernel checks them against max_position, a device kernel clamps.
RotaryGeometry MakeRotaryGeometry(const Node& node, const RotaryAttributes& attributes, const Tensor& x,
                                  const Tensor& cos, const Tensor& sin, const Tensor* positions);

}  // namespace tessera
