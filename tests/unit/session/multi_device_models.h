// Shared by the several-device tests (tests/unit/session/multi_device_test.cc on two simulated devices,
// tests/cuda/cuda_multi_gpu_test.cc on two GPUs): a small MLP model, deterministic inputs, and the comparison
// of device results with the CPU EP's (the devices' MatMul sums in another order).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/tessera.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {

// y = Relu(x @ w) + b, x [N, n]: MatMul, Relu and Add, which every EP under test runs.
inline std::string MlpModel(int64_t n) {
  std::vector<float> w(static_cast<size_t>(n * n)), b(static_cast<size_t>(n));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 7 % 13) - 6) / 8.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) - 2.0f;
  return GraphBuilder()
      .Input("x", {-1, n})
      .FloatInitializer("w", {n, n}, w)
      .FloatInitializer("b", {n}, b)
      .Node("MatMul", {"x", "w"}, {"m"})
      .Node("Relu", {"m"}, {"r"})
      .Node("Add", {"r", "b"}, {"y"})
      .Output("y")
      .Serialize();
}

// A [rows, cols] float tensor of values start - 2 + 0.25 * (i % 17).
inline Tensor RampTensor(int64_t rows, int64_t cols, float start) {
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < values.size(); ++i) values[i] = start + static_cast<float>(i % 17) * 0.25f - 2.0f;
  return Tensor::FromVector<float>({rows, cols}, values);
}

// Same shape, every element within 1e-4 relative of the expected one.
inline void ExpectNearRelative(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const std::vector<float> a = actual.ToVector<float>(), e = expected.ToVector<float>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], e[i], 1e-4f * (1.0f + std::abs(e[i]))) << what << " at " << i;
}

}  // namespace tessera::test
