// Hann/Hamming/Blackman windows (periodic and symmetric) against their formulas, MelWeightMatrix shape
// and triangle peaks.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

Tensor Window(double a0, double a1, double a2, int64_t size, bool periodic) {
  std::vector<float> v;
  const double d = static_cast<double>(periodic ? size : size - 1);
  for (int64_t n = 0; n < size; ++n) {
    const double t = 2 * std::numbers::pi * static_cast<double>(n) / d;
    v.push_back(static_cast<float>(a0 - a1 * std::cos(t) + a2 * std::cos(2 * t)));
  }
  return Tensor::FromVector<float>({size}, v);
}

TEST(WindowsOpTest, CosineWindowsMatchFormulas) {
  for (bool periodic : {true, false}) {
    const int64_t p = periodic;
    auto size = Tensor::FromVector<int64_t>({}, {9});
    OpTester("HannWindow", 17).Attr("periodic", p).Input("n", size).Output("y", Window(0.5, 0.5, 0, 9, periodic))
        .Tolerance(1e-6, 1e-6).Run();
    OpTester("HammingWindow", 17).Attr("periodic", p).Input("n", size)
        .Output("y", Window(25.0 / 46, 21.0 / 46, 0, 9, periodic)).Tolerance(1e-6, 1e-6).Run();
    OpTester("BlackmanWindow", 17).Attr("periodic", p).Input("n", size)
        .Output("y", Window(0.42, 0.5, 0.08, 9, periodic)).Tolerance(1e-6, 1e-6).Run();
  }
}

TEST(WindowsOpTest, MelWeightMatrixTrianglesPeakAtOne) {
  OpTester t("MelWeightMatrix", 17);
  t.Input("bins", Tensor::FromVector<int32_t>({}, {4}))
      .Input("dft", Tensor::FromVector<int32_t>({}, {64}))
      .Input("rate", Tensor::FromVector<int32_t>({}, {16000}))
      .Input("low", Tensor::FromVector<float>({}, {100}))
      .Input("high", Tensor::FromVector<float>({}, {6000}))
      .OutputName("w");
  const Tensor w = t.RunOn("cpu")[0];
  ASSERT_EQ(w.shape(), Shape({33, 4}));
  for (int64_t m = 0; m < 4; ++m) {
    float peak = 0;
    for (int64_t b = 0; b < 33; ++b) peak = std::max(peak, w.Data<float>()[b * 4 + m]);
    EXPECT_FLOAT_EQ(peak, 1.0f) << "mel bin " << m;
  }
}

}  // namespace
}  // namespace tessera::test
