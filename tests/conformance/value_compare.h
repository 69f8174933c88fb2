// Output comparison with the ONNX backend runner's rules (numpy.testing.assert_allclose):
// same element type and shape; floating point |actual - expected| <= atol + rtol * |expected| with
// NaN matching NaN and infinities matching exactly; integers, bools and strings exactly. Sequences
// compare element by element; an absent optional matches only an absent optional.
#pragma once

#include <string>

#include "tessera/tessera.h"

namespace tessera::conformance {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// An empty string when `actual` matches `expected`, else what differs (first mismatch, counts), with
// `name` naming the output.
std::string CompareValues(const std::string& name, const Value& expected, const Value& actual, Tolerance tolerance);

}  // namespace tessera::conformance
