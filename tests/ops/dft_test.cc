// DFT (forward/inverse, one-sided, power-of-two and other lengths, padding via dft_length) and STFT
// against a naive O(n^2) transform.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

// [1, n, 1] real signal -> [1, bins, 2] with length L (zero-padded or truncated).
Tensor NaiveDft(const std::vector<float>& x, int64_t length, int64_t bins, bool inverse) {
  std::vector<float> out;
  for (int64_t f = 0; f < bins; ++f) {
    std::complex<double> sum = 0;
    for (int64_t k = 0; k < std::min<int64_t>(length, static_cast<int64_t>(x.size())); ++k)
      sum += static_cast<double>(x[static_cast<size_t>(k)]) *
             std::polar(1.0, (inverse ? 2 : -2) * std::numbers::pi * static_cast<double>(f * k) / static_cast<double>(length));
    if (inverse) sum /= static_cast<double>(length);
    out.push_back(static_cast<float>(sum.real()));
    out.push_back(static_cast<float>(sum.imag()));
  }
  return Tensor::FromVector<float>({1, bins, 2}, out);
}

TEST(DftOpTest, MatchesNaiveForVariousLengths) {
  Tensor x = RandomTensor(DataType::kFloat, {1, 12, 1}, 21);
  const std::vector<float> xv = x.ToVector<float>();
  for (int64_t length : {12, 16, 7}) {
    for (bool onesided : {false, true}) {
      const int64_t bins = onesided ? length / 2 + 1 : length;
      OpTester("DFT", 17)
          .Attr("onesided", int64_t{onesided})
          .Input("x", x)
          .Input("len", Tensor::FromVector<int64_t>({}, {length}))
          .Output("y", NaiveDft(xv, length, bins, false))
          .Tolerance(1e-4, 1e-4)
          .Run();
    }
  }
  OpTester("DFT", 17).Attr("inverse", int64_t{1}).Input("x", x).Output("y", NaiveDft(xv, 12, 12, true))
      .Tolerance(1e-5, 1e-4).Run();
}

TEST(DftOpTest, StftFramesMatchNaive) {
  Tensor x = RandomTensor(DataType::kFloat, {1, 20, 1}, 22);
  const std::vector<float> xv = x.ToVector<float>();
  std::vector<float> expected;
  for (int64_t frame = 0; frame < 3; ++frame) {  // (20 - 8) / 5 + 1 frames of 8 every 5
    const std::vector<float> segment(xv.begin() + frame * 5, xv.begin() + frame * 5 + 8);
    const std::vector<float> bins = NaiveDft(segment, 8, 5, false).ToVector<float>();
    expected.insert(expected.end(), bins.begin(), bins.end());
  }
  OpTester("STFT", 17)
      .Input("x", x)
      .Input("step", Tensor::FromVector<int64_t>({}, {5}))
      .OmittedInput()
      .Input("len", Tensor::FromVector<int64_t>({}, {8}))
      .Output("y", Tensor::FromVector<float>({1, 3, 5, 2}, expected))
      .Tolerance(1e-4, 1e-4)
      .Run();
}

}  // namespace
}  // namespace tessera::test
