// Float16 / bfloat16 variants of the backend test cases: every float32 tensor of a model (graph inputs,
// outputs, value infos, initializers, tensor attributes, Cast/dtype targets, nested graphs) becomes the
// 16-bit type, its float32 inputs are rounded to it, and its outputs are widened back and compared with the
// float32 reference under a tolerance that fits the type. This checks that every op computing on float32
// also accepts float16 and bfloat16 (tests/conformance/README.md, "Lowered precision").
#pragma once

#include "onnx/onnx_pb.h"
#include "tessera/tessera.h"
#include "value_compare.h"

namespace tessera::conformance {

// Rewrites `model` in place; returns false (and leaves it unchanged) when no graph input or output is float32
// (such a case has nothing to lower). `half` is DataType::kFloat16 or DataType::kBFloat16.
bool LowerModelPrecision(onnx::ModelProto& model, DataType half);

// Rounds float32 tensors (and sequences of them) to `half`; other values are returned as they are.
Value LowerValue(const Value& value, DataType half);
// Widens float16 / bfloat16 tensors (and sequences of them) to float32.
Value WidenValue(const Value& value);

// The comparison tolerance for results computed from `half` inputs.
Tolerance LoweredTolerance(DataType half);

}  // namespace tessera::conformance
