// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and
// QLinearConv against hand-computed values and naive references written out in this file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

template <typename T>
Tensor Make(Shape shape, std::vector<T> values) {
  return Tensor::FromVector<T>(std::move(shape), values);
}

// round-half-to-even + zero point, saturated: the spec's formula, with the C library's rounding.
template <typename Q>
Q NaiveQuantize(float scaled, int32_t zero_point) {
  const double v = std::nearbyint(static_cast<double>(scaled)) + zero_point;
  return static_cast<Q>(std::clamp<double>(v, std::numeric_limits<Q>::min(), std::numeric_limits<Q>::max()));
}

// Integer elements of a tensor (int8/uint8/int32) as int32.
std::vector<int32_t> Ints(const Tensor& t) {
  std::vector<int32_t> out(static_cast<size_t>(t.NumElements()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.type() == DataType::kUInt8)
      out[i] = t.Data<uint8_t>()[i];
    else if (t.type() == DataType::kInt8)
      out[i] = t.Data<int8_t>()[i];
    else
      out[i] = t.Data<int32_t>()[i];
  }
  return out;
}

Tensor RandomQ(DataType type, const Shape& shape, uint32_t seed) {
  return type == DataType::kUInt8 ? RandomTensor(type, shape, seed, 0, 255)
                                  : RandomTensor(type, shape, seed, -128, 127);
}

TEST(QuantizeLinearTest, RoundsHalfToEvenAndSaturates) {
  const Tensor x = Make<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 1000.0f, -1000.0f});
  OpTester u8("QuantizeLinear", 13);
  u8.Input("x", x).Input("scale", Make<float>({}, {0.5f})).Input("zp", Make<uint8_t>({}, {10}));
  u8.Output("y", Make<uint8_t>({8}, {11, 13, 15, 9, 7, 5, 255, 0})).Run();

  OpTester i8("QuantizeLinear", 10);  // x / 1: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2
  i8.Input("x", x).Input("scale", Make<float>({}, {1.0f})).Input("zp", Make<int8_t>({}, {-1}));
  i8.Output("y", Make<int8_t>({8}, {-1, 1, 1, -1, -3, -3, 127, -128})).Run();

  OpTester no_zp("QuantizeLinear", 13);  // omitted zero point: uint8 with zero point 0
  no_zp.Input("x", Make<int32_t>({3}, {7, -3, 600})).Input("scale", Make<float>({}, {2.0f}));
  no_zp.Output("y", Make<uint8_t>({3}, {4, 0, 255})).Run();
}

TEST(QuantizeLinearTest, PerAxisMatchesNaiveReference) {
  const Shape shape{2, 3, 4, 5};
  for (int64_t axis : {0, 1, 2, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const int64_t a = axis < 0 ? axis + 4 : axis, channels = shape[static_cast<size_t>(a)];
    const Tensor x = RandomTensor(DataType::kFloat, shape, 1, -20, 20);
    const Tensor scale = RandomTensor(DataType::kFloat, {channels}, 2, 0.05, 0.5);
    const Tensor zp = RandomTensor(DataType::kInt8, {channels}, 3, -20, 20);
    Tensor expected = Tensor::Allocate(DataType::kInt8, shape);
    const int64_t inner = shape.SizeFrom(static_cast<size_t>(a) + 1);
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const int64_t c = (i / inner) % channels;
      expected.Data<int8_t>()[i] =
          NaiveQuantize<int8_t>(x.Data<float>()[i] / scale.Data<float>()[c], zp.Data<int8_t>()[c]);
    }
    OpTester t("QuantizeLinear", 13);
    t.Attr("axis", axis).Input("x", x).Input("scale", scale).Input("zp", zp).Output("y", expected).Run();
  }
}

TEST(QuantizeLinearTest, Opset21BlockedScalesAndInt16) {
  // x [2, 5], axis 1, block 2: scale [2, 3], each scale covers two columns (the last one column).
  const Tensor x = Make<float>({2, 5}, {1, 2, 3, 4, 5, -1, -2, -3, -4, -5});
  const Tensor scale = Make<float>({2, 3}, {1, 0.5f, 0.25f, 2, 4, 0.001f});
  const Tensor zp = Make<int16_t>({2, 3}, {0, 100, -100, 1, 2, 3});
  OpTester t("QuantizeLinear", 21);
  t.Attr("axis", int64_t{1}).Attr("block_size", int64_t{2});
  t.Input("x", x).Input("scale", scale).Input("zp", zp);
  t.Output("y", Make<int16_t>({2, 5}, {1, 2, 106, 108, -80, 1, 0, 1, 1, -4997})).Run();
}

TEST(QuantizeLinearTest, Float16InputFromOpset19) {
  const Tensor x = Make<Float16>({3}, {ToFloat16(1.0f), ToFloat16(-2.5f), ToFloat16(3.0f)});
  OpTester t("QuantizeLinear", 19);
  t.Input("x", x).Input("scale", Make<Float16>({}, {ToFloat16(0.5f)})).Input("zp", Make<uint8_t>({}, {128}));
  t.Output("y", Make<uint8_t>({3}, {130, 123, 134})).Run();
}

TEST(QuantizeLinearTest, UnsupportedTypesFailAtSessionCreation) {
  OpTester int16_before_21("QuantizeLinear", 13);
  int16_before_21.Input("x", Make<float>({1}, {1})).Input("scale", Make<float>({}, {1}));
  int16_before_21.Input("zp", Make<int16_t>({}, {0})).Output("y", Make<int16_t>({1}, {1}));
  int16_before_21.ExpectFailure("no kernel for op QuantizeLinear").Run();

  OpTester bad_axis("QuantizeLinear", 13);
  bad_axis.Input("x", Make<float>({2, 3}, {1, 2, 3, 4, 5, 6})).Input("scale", Make<float>({2}, {1, 1}));
  bad_axis.Input("zp", Make<uint8_t>({2}, {0, 0})).Output("y", Make<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  bad_axis.ExpectFailure("per-axis scale").Run();
}

TEST(DequantizeLinearTest, PerTensorPerAxisAndInt32) {
  OpTester per_tensor("DequantizeLinear", 10);
  per_tensor.Input("x", Make<uint8_t>({4}, {0, 3, 128, 255})).Input("scale", Make<float>({}, {2.0f}));
  per_tensor.Input("zp", Make<uint8_t>({}, {128}));
  per_tensor.Output("y", Make<float>({4}, {-256, -250, 0, 254})).Run();

  OpTester per_axis("DequantizeLinear", 13);
  per_axis.Attr("axis", int64_t{0}).Input("x", Make<int8_t>({2, 2}, {-128, 127, 10, -10}));
  per_axis.Input("scale", Make<float>({2}, {0.5f, 3.0f})).Input("zp", Make<int8_t>({2}, {-1, 5}));
  per_axis.Output("y", Make<float>({2, 2}, {-63.5f, 64.0f, 15.0f, -45.0f})).Run();

  OpTester int32("DequantizeLinear", 13);
  int32.Input("x", Make<int32_t>({3}, {-2000000, 0, 123456})).Input("scale", Make<float>({}, {0.25f}));
  int32.Output("y", Make<float>({3}, {-500000.0f, 0.0f, 30864.0f})).Run();
}

TEST(DequantizeLinearTest, Opset21BlockedUInt16AndFloat16Output) {
  OpTester blocked("DequantizeLinear", 21);
  blocked.Attr("axis", int64_t{0}).Attr("block_size", int64_t{2});
  blocked.Input("x", Make<uint16_t>({3, 1}, {1000, 2000, 65535})).Input("scale", Make<float>({2, 1}, {0.5f, 2.0f}));
  blocked.Input("zp", Make<uint16_t>({2, 1}, {1000, 65534}));
  blocked.Output("y", Make<float>({3, 1}, {0.0f, 500.0f, 2.0f})).Run();

  OpTester half("DequantizeLinear", 19);
  half.Input("x", Make<uint8_t>({2}, {130, 120})).Input("scale", Make<Float16>({}, {ToFloat16(0.25f)}));
  half.Input("zp", Make<uint8_t>({}, {128}));
  half.Output("y", Make<Float16>({2}, {ToFloat16(0.5f), ToFloat16(-2.0f)})).Run();
}

TEST(DynamicQuantizeLinearTest, ScaleZeroPointAndValues) {
  // min 0 (forced) .. max 2.55: scale 0.01, zero point 0.
  OpTester positive("DynamicQuantizeLinear", 11);
  positive.Input("x", Make<float>({4}, {0.0f, 1.0f, 2.55f, 0.014f}));
  positive.Output("y", Make<uint8_t>({4}, {0, 100, 255, 1}));
  positive.Output("scale", Make<float>({}, {0.01f})).Output("zp", Make<uint8_t>({}, {0})).Run();

  // min -1, max 1.55: scale 0.01, zero point round(100) = 100.
  OpTester mixed("DynamicQuantizeLinear", 11);
  mixed.Input("x", Make<float>({2, 2}, {-1.0f, 1.55f, 0.0f, 0.5f}));
  mixed.Output("y", Make<uint8_t>({2, 2}, {0, 255, 100, 150}));
  mixed.Output("scale", Make<float>({}, {0.01f})).Output("zp", Make<uint8_t>({}, {100})).Run();

  OpTester zeros("DynamicQuantizeLinear", 11);
  zeros.Input("x", Make<float>({3}, {0, 0, 0})).Output("y", Make<uint8_t>({3}, {0, 0, 0}));
  zeros.Output("scale", Make<float>({}, {0.0f})).Output("zp", Make<uint8_t>({}, {0})).Run();
}

// Large inputs: the range is reduced in chunks of 16 lanes over threads, with a tail that is not a whole vector; the
// extremes sit in the tail (the minimum) and inside a later chunk's vectors (the maximum).
TEST(DynamicQuantizeLinearTest, RangeOverChunksVectorsAndTail) {
  const int64_t n = 3 * 16384 + 7;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 3.0f * std::sin(0.37f * static_cast<float>(i)) + 0.5f;
  x[static_cast<size_t>(n - 2)] = -7.25f;
  x[static_cast<size_t>(2 * 16384 + 5)] = 9.5f;
  const float scale = (9.5f - -7.25f) / 255.0f;
  const float zp = std::max(0.0f, std::min(255.0f, std::nearbyint(7.25f / scale)));
  std::vector<uint8_t> q(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    q[i] = static_cast<uint8_t>(std::max(0.0f, std::min(255.0f, std::nearbyint(x[i] / scale) + zp)));
  OpTester big("DynamicQuantizeLinear", 11);
  big.Input("x", Make<float>({n}, x)).Output("y", Make<uint8_t>({n}, q));
  big.Output("scale", Make<float>({}, {scale})).Output("zp", Make<uint8_t>({}, {static_cast<uint8_t>(zp)})).Run();
}

// Naive batched matmul of (a - a_zero[row]) * (b - b_zero[col]); b has no batch dims or the same as a.
std::vector<int32_t> NaiveIntMatMul(const Tensor& a, const Tensor& b, const std::vector<int32_t>& a_zero,
                                    const std::vector<int32_t>& b_zero, int64_t batches, int64_t m, int64_t k,
                                    int64_t n, bool b_batched) {
  const std::vector<int32_t> av = Ints(a), bv = Ints(b);
  std::vector<int32_t> out(static_cast<size_t>(batches * m * n));
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int32_t sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          const int32_t x = av[static_cast<size_t>((bt * m + i) * k + p)] - a_zero[a_zero.size() == 1 ? 0 : i];
          const int32_t y =
              bv[static_cast<size_t>(((b_batched ? bt : 0) * k + p) * n + j)] - b_zero[b_zero.size() == 1 ? 0 : j];
          sum += x * y;
        }
        out[static_cast<size_t>((bt * m + i) * n + j)] = sum;
      }
  return out;
}

TEST(MatMulIntegerTest, HandComputed) {
  // (A - 12) * B for the ONNX example shapes.
  OpTester t("MatMulInteger", 10);
  t.Input("A", Make<uint8_t>({2, 3}, {11, 7, 3, 10, 6, 2})).Input("B", Make<uint8_t>({3, 2}, {1, 4, 2, 5, 3, 6}));
  t.Input("a_zero_point", Make<uint8_t>({}, {12})).Input("b_zero_point", Make<uint8_t>({}, {0}));
  t.Output("Y", Make<int32_t>({2, 2}, {-38, -83, -44, -98})).Run();
}

TEST(MatMulIntegerTest, BatchedWithPerRowAndColumnZeroPointsMatchesNaive) {
  const int64_t batches = 3, m = 20, k = 37, n = 300;
  for (bool b_batched : {false, true}) {
    const Tensor a = RandomQ(DataType::kUInt8, {batches, m, k}, 10);
    const Tensor b = RandomQ(DataType::kInt8, b_batched ? Shape{batches, k, n} : Shape{k, n}, 11);
    const Tensor a_zp = RandomQ(DataType::kUInt8, {m}, 12), b_zp = RandomQ(DataType::kInt8, {n}, 13);
    const std::vector<int32_t> expected = NaiveIntMatMul(a, b, Ints(a_zp), Ints(b_zp), batches, m, k, n, b_batched);
    OpTester t("MatMulInteger", 10);
    t.Input("A", a).Input("B", b, /*constant=*/true).Input("a_zero_point", a_zp).Input("b_zero_point", b_zp);
    t.Output("Y", Make<int32_t>({batches, m, n}, expected)).Run();
  }
}

// A 2-D int8 B without zero points and a per-tensor A zero point take oneDNN's int8 matmul.
TEST(MatMulIntegerTest, SymmetricInt8WeightsMatchNaive) {
  const int64_t batches = 2, m = 9, k = 70, n = 33;
  uint32_t seed = 90;
  for (DataType a_type : {DataType::kUInt8, DataType::kInt8}) {
    for (bool constant_b : {false, true}) {
      const Tensor a = RandomQ(a_type, {batches, m, k}, ++seed), b = RandomQ(DataType::kInt8, {k, n}, ++seed);
      const int32_t a_zero = a_type == DataType::kUInt8 ? 120 : -3;
      const Tensor a_zp = a_type == DataType::kUInt8 ? Make<uint8_t>({}, {120}) : Make<int8_t>({}, {-3});
      const std::vector<int32_t> expected = NaiveIntMatMul(a, b, {a_zero}, {0}, batches, m, k, n, false);
      OpTester t("MatMulInteger", 10);
      t.Input("A", a).Input("B", b, constant_b).Input("a_zero_point", a_zp);
      t.Output("Y", Make<int32_t>({batches, m, n}, expected)).Run();

      std::vector<uint8_t> quantized(expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        quantized[i] = NaiveQuantize<uint8_t>(static_cast<float>(expected[i]) * (0.02f * 0.03f / 0.5f), 100);
      OpTester q("QLinearMatMul", 10);
      q.Input("a", a).Input("a_scale", Make<float>({}, {0.02f})).Input("a_zero_point", a_zp);
      q.Input("b", b, constant_b)
          .Input("b_scale", Make<float>({}, {0.03f}))
          .Input("b_zero_point", Make<int8_t>({}, {0}));
      q.Input("y_scale", Make<float>({}, {0.5f})).Input("y_zero_point", Make<uint8_t>({}, {100}));
      q.Output("y", Make<uint8_t>({batches, m, n}, quantized)).Run();
    }
  }
}

// Dynamically quantized transformers (onnx.quantize's MatMulInteger after DynamicQuantizeLinear) carry
// constant uint8 weights with a zero point: on CPUs with VNNI they run on oneDNN with the weights shifted
// to int8 and a rank-1 correction, elsewhere on the int16 GEMM. Extreme operands (A = 255 against
// B = 0 / 255) are where a saturating 16-bit pair sum would show.
TEST(MatMulIntegerTest, WeightsWithZeroPointsOfEitherTypeMatchNaive) {
  const int64_t batches = 2, m = 11, k = 97, n = 45;
  uint32_t seed = 300;
  for (DataType a_type : {DataType::kUInt8, DataType::kInt8}) {
    for (DataType b_type : {DataType::kUInt8, DataType::kInt8}) {
      for (bool per_column : {false, true}) {
        for (bool constant_b : {true, false}) {
          Tensor a = RandomQ(a_type, {batches, m, k}, ++seed), b = RandomQ(b_type, {k, n}, ++seed);
          // Row 0 of A and column 0 of B at their extremes.
          for (int64_t kk = 0; kk < k; ++kk) {
            if (a_type == DataType::kUInt8)
              a.Data<uint8_t>()[kk] = 255;
            else
              a.Data<int8_t>()[kk] = -128;
            if (b_type == DataType::kUInt8)
              b.Data<uint8_t>()[kk * n] = kk % 2 ? 255 : 0;
            else
              b.Data<int8_t>()[kk * n] = -128;
          }
          const Tensor a_zp = RandomQ(a_type, {}, ++seed);
          const Tensor b_zp = RandomQ(b_type, per_column ? Shape{n} : Shape{}, ++seed);
          const std::vector<int32_t> expected =
              NaiveIntMatMul(a, b, Ints(a_zp), Ints(b_zp), batches, m, k, n, false);
          OpTester t("MatMulInteger", 10);
          t.Input("A", a).Input("B", b, constant_b).Input("a_zero_point", a_zp).Input("b_zero_point", b_zp);
          t.Output("Y", Make<int32_t>({batches, m, n}, expected)).Run();
        }
      }
    }
  }
}

// com.microsoft MatMulIntegerToFloat (what integer_matmul_fusion writes, and what onnxruntime's optimizer
// leaves in saved models): float(sums) * (a_scale * b_scale[j]) + bias[j], constant and runtime B.
TEST(MatMulIntegerToFloatTest, MatchesNaiveSumsTimesScalesPlusBias) {
  const int64_t m = 6, k = 29, n = 13;
  uint32_t seed = 400;
  for (bool constant_b : {true, false}) {
    const Tensor a = RandomQ(DataType::kUInt8, {m, k}, ++seed), b = RandomQ(DataType::kUInt8, {k, n}, ++seed);
    const Tensor a_zp = Make<uint8_t>({}, {117}), b_zp = RandomQ(DataType::kUInt8, {n}, ++seed);
    const Tensor b_scale = RandomTensor(DataType::kFloat, {n}, ++seed, 0.001, 0.01);
    const Tensor bias = RandomTensor(DataType::kFloat, {n}, ++seed, -1, 1);
    const float a_scale = 0.0173f;
    const std::vector<int32_t> sums = NaiveIntMatMul(a, b, Ints(a_zp), Ints(b_zp), 1, m, k, n, false);
    std::vector<float> expected(sums.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const float multiplier = a_scale * b_scale.Data<float>()[j];
        expected[static_cast<size_t>(i * n + j)] =
            static_cast<float>(sums[static_cast<size_t>(i * n + j)]) * multiplier + bias.Data<float>()[j];
      }
    OpTester t("MatMulIntegerToFloat", 1, "com.microsoft");
    t.Input("A", a).Input("B", b, constant_b).Input("a_scale", Make<float>({}, {a_scale})).Input("b_scale", b_scale);
    t.Input("a_zero_point", a_zp).Input("b_zero_point", b_zp).Input("bias", bias);
    t.Output("Y", Make<float>({m, n}, expected)).Run();
  }
  OpTester bad("MatMulIntegerToFloat", 1, "com.microsoft");
  bad.Input("A", RandomQ(DataType::kUInt8, {2, 4}, 1)).Input("B", RandomQ(DataType::kUInt8, {4, 3}, 2));
  bad.Input("a_scale", Make<float>({}, {0.1f})).Input("b_scale", Make<float>({2}, {0.1f, 0.2f}));
  bad.Output("Y", Make<float>({2, 3}, std::vector<float>(6))).ExpectFailure("b_scale").Run();
}

TEST(MatMulIntegerTest, VectorOperandsAndOmittedZeroPoints) {
  OpTester t("MatMulInteger", 10);
  t.Input("A", Make<int8_t>({3}, {1, -2, 3})).Input("B", Make<int8_t>({3}, {4, 5, -6}));
  t.Output("Y", Make<int32_t>({}, {4 - 10 - 18})).Run();
}

TEST(QLinearMatMulTest, MatchesNaiveRequantization) {
  const int64_t m = 7, k = 33, n = 19;
  const Tensor a = RandomQ(DataType::kInt8, {m, k}, 20), b = RandomQ(DataType::kUInt8, {k, n}, 21);
  const Tensor a_scale = RandomTensor(DataType::kFloat, {m}, 22, 0.01, 0.05);
  const Tensor a_zp = RandomQ(DataType::kInt8, {m}, 23);
  const Tensor b_scale = RandomTensor(DataType::kFloat, {}, 24, 0.01, 0.05);
  const Tensor b_zp = RandomQ(DataType::kUInt8, {}, 25);
  const float y_scale = 0.3f;
  const std::vector<int32_t> sums = NaiveIntMatMul(a, b, Ints(a_zp), Ints(b_zp), 1, m, k, n, false);
  std::vector<uint8_t> expected(sums.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float multiplier = a_scale.Data<float>()[i] * b_scale.Data<float>()[0] / y_scale;
      expected[static_cast<size_t>(i * n + j)] =
          NaiveQuantize<uint8_t>(static_cast<float>(sums[static_cast<size_t>(i * n + j)]) * multiplier, 120);
    }
  OpTester t("QLinearMatMul", 10);
  t.Input("a", a).Input("a_scale", a_scale).Input("a_zero_point", a_zp);
  t.Input("b", b).Input("b_scale", b_scale).Input("b_zero_point", b_zp);
  t.Input("y_scale", Make<float>({}, {y_scale})).Input("y_zero_point", Make<uint8_t>({}, {120}));
  t.Output("y", Make<uint8_t>({m, n}, expected)).Run();
}

// Naive grouped N-D convolution of (x - x_zero) and (w - w_zero[oc]) with int32 sums, spatial dims
// lifted to 3 (leading ones). Geometry: explicit symmetric pads, strides, dilations.
struct IntConvCase {
  Shape x, w;
  int64_t group = 1, stride = 1, dilation = 1, pad = 0;
};

std::vector<int64_t> Lift3(const Shape& s) {
  std::vector<int64_t> out(3, 1);
  for (size_t d = 2; d < s.rank(); ++d) out[3 - (s.rank() - d)] = s[d];
  return out;
}

std::pair<Shape, std::vector<int32_t>> NaiveIntConv(const IntConvCase& c, const Tensor& x, const Tensor& w,
                                                    int32_t x_zero, const std::vector<int32_t>& w_zero) {
  const std::vector<int32_t> xv = Ints(x), wv = Ints(w);
  const std::vector<int64_t> in = Lift3(c.x), k = Lift3(c.w);
  const size_t rank = c.x.rank() - 2;
  std::vector<int64_t> out(3, 1), st(3, 1), dl(3, 1), pd(3, 0);
  std::vector<int64_t> out_dims{c.x[0], c.w[0]};
  for (size_t t = 3 - rank; t < 3; ++t) {
    st[t] = c.stride, dl[t] = c.dilation, pd[t] = c.pad;
    out[t] = (in[t] + 2 * c.pad - (k[t] - 1) * c.dilation - 1) / c.stride + 1;
    out_dims.push_back(out[t]);
  }
  const int64_t cin = c.x[1], m = c.w[0], cpg = cin / c.group, mpg = m / c.group;
  std::vector<int32_t> y;
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t b = 0; b < out[1]; ++b)
          for (int64_t e = 0; e < out[2]; ++e) {
            int32_t sum = 0;
            for (int64_t ch = 0; ch < cpg; ++ch)
              for (int64_t i = 0; i < k[0]; ++i)
                for (int64_t j = 0; j < k[1]; ++j)
                  for (int64_t l = 0; l < k[2]; ++l) {
                    const int64_t pi = a * st[0] - pd[0] + i * dl[0], pj = b * st[1] - pd[1] + j * dl[1],
                                  pl = e * st[2] - pd[2] + l * dl[2];
                    if (pi < 0 || pi >= in[0] || pj < 0 || pj >= in[1] || pl < 0 || pl >= in[2]) continue;
                    const int64_t ic = (o / mpg) * cpg + ch;
                    const int32_t xi =
                        xv[static_cast<size_t>((((n * cin + ic) * in[0] + pi) * in[1] + pj) * in[2] + pl)];
                    const int32_t wi = wv[static_cast<size_t>((((o * cpg + ch) * k[0] + i) * k[1] + j) * k[2] + l)];
                    sum += (xi - x_zero) * (wi - w_zero[w_zero.size() == 1 ? 0 : o]);
                  }
            y.push_back(sum);
          }
  return {Shape(out_dims), y};
}

void AddGeometry(OpTester& t, const IntConvCase& c) {
  const size_t rank = c.x.rank() - 2;
  t.Attr("group", c.group);
  t.Attr("strides", std::vector<int64_t>(rank, c.stride));
  t.Attr("dilations", std::vector<int64_t>(rank, c.dilation));
  t.Attr("pads", std::vector<int64_t>(2 * rank, c.pad));
}

std::vector<IntConvCase> ConvCases() {
  return {
      {{1, 3, 9}, {4, 3, 3}, 1, 2, 1, 1},              // 1-D, stride 2
      {{2, 4, 7, 6}, {6, 2, 3, 3}, 2, 1, 2, 2},        // 2-D, groups, dilation, padding
      {{1, 8, 5, 5}, {8, 1, 3, 3}, 8, 1, 1, 1},        // depthwise: (image, group) pairs run in parallel
      {{1, 16, 20, 20}, {40, 16, 1, 1}, 1, 1, 1, 0},   // pointwise, several GEMM tiles
      {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, 1, 1, 1, 1},  // 3-D
  };
}

TEST(ConvIntegerTest, MatchesNaiveReference) {
  uint32_t seed = 40;
  for (const IntConvCase& c : ConvCases()) {
    SCOPED_TRACE("x " + c.x.ToString() + " w " + c.w.ToString());
    const Tensor x = RandomQ(DataType::kUInt8, c.x, ++seed), w = RandomQ(DataType::kInt8, c.w, ++seed);
    const Tensor x_zp = Make<uint8_t>({}, {131});
    const Tensor w_zp = RandomQ(DataType::kInt8, {c.w[0]}, ++seed);
    const auto [shape, expected] = NaiveIntConv(c, x, w, 131, Ints(w_zp));
    OpTester t("ConvInteger", 10);
    AddGeometry(t, c);
    t.Input("x", x).Input("w", w).Input("x_zero_point", x_zp).Input("w_zero_point", w_zp);
    t.Output("y", Make<int32_t>(shape, expected)).Run();
  }
}

// int8 weights without zero points take oneDNN's int8 convolution; check it on both x types, with
// constant and runtime weights.
TEST(ConvIntegerTest, SymmetricInt8WeightsMatchNaiveReference) {
  uint32_t seed = 80;
  for (DataType x_type : {DataType::kUInt8, DataType::kInt8}) {
    for (const IntConvCase& c : ConvCases()) {
      SCOPED_TRACE("x " + c.x.ToString() + " w " + c.w.ToString() + " " + DataTypeName(x_type));
      const Tensor x = RandomQ(x_type, c.x, ++seed), w = RandomQ(DataType::kInt8, c.w, ++seed);
      const int32_t x_zero = x_type == DataType::kUInt8 ? 140 : -7;
      const Tensor x_zp = x_type == DataType::kUInt8 ? Make<uint8_t>({}, {140}) : Make<int8_t>({}, {-7});
      const auto [shape, expected] = NaiveIntConv(c, x, w, x_zero, {0});
      OpTester t("ConvInteger", 10);
      AddGeometry(t, c);
      t.Input("x", x).Input("w", w, /*constant=*/seed % 2 == 0).Input("x_zero_point", x_zp);
      t.Input("w_zero_point", Make<int8_t>({}, {0}));
      t.Output("y", Make<int32_t>(shape, expected)).Run();
    }
  }
}

// Constant weights with zero points (uint8 or int8) run on oneDNN as shifted int8 weights plus the window
// sums of x times the per-channel remainder: exact like the reference, with padding, groups, dilation and 3-D.
TEST(ConvIntegerTest, ConstantWeightsWithZeroPointsMatchNaiveReference) {
  uint32_t seed = 120;
  for (DataType w_type : {DataType::kUInt8, DataType::kInt8}) {
    for (bool per_channel : {false, true}) {
      for (const IntConvCase& c : ConvCases()) {
        SCOPED_TRACE("x " + c.x.ToString() + " w " + c.w.ToString() + " " + DataTypeName(w_type) +
                     (per_channel ? " per channel" : " per tensor"));
        const Tensor x = RandomQ(DataType::kUInt8, c.x, ++seed), w = RandomQ(w_type, c.w, ++seed);
        const Tensor w_zp = RandomQ(w_type, per_channel ? Shape{c.w[0]} : Shape{}, ++seed);
        const auto [shape, expected] = NaiveIntConv(c, x, w, 97, Ints(w_zp));
        OpTester t("ConvInteger", 10);
        AddGeometry(t, c);
        t.Input("x", x).Input("w", w, /*constant=*/true).Input("x_zero_point", Make<uint8_t>({}, {97}));
        t.Input("w_zero_point", w_zp);
        t.Output("y", Make<int32_t>(shape, expected)).Run();
      }
    }
  }
}

TEST(ConvIntegerTest, PaddingReadsAsZeroPointAndOmittedZeroPoints) {
  // 1x1x2x2 input, 2x2 kernel of ones, pad 1: each output sums the covered inputs minus x_zero_point.
  OpTester t("ConvInteger", 10);
  t.Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  t.Input("x", Make<uint8_t>({1, 1, 2, 2}, {11, 12, 13, 14})).Input("w", Make<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1}));
  t.Input("x_zero_point", Make<uint8_t>({}, {10}));
  t.Output("y", Make<int32_t>({1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4})).Run();

  OpTester no_zp("ConvInteger", 10);
  no_zp.Input("x", Make<int8_t>({1, 1, 3}, {1, -2, 3})).Input("w", Make<int8_t>({2, 1, 2}, {1, 1, -1, 2}));
  no_zp.Output("y", Make<int32_t>({1, 2, 2}, {-1, 1, -5, 8})).Run();
}

// uint8 weights with per-channel zero points (im2col path) and int8 weights without zero points (oneDNN).
void CheckQLinearConv(DataType w_type, uint32_t seed) {
  for (const IntConvCase& c : ConvCases()) {
    SCOPED_TRACE("x " + c.x.ToString() + " w " + c.w.ToString() + " " + DataTypeName(w_type));
    const int64_t m = c.w[0];
    const Tensor x = RandomQ(DataType::kInt8, c.x, ++seed), w = RandomQ(w_type, c.w, ++seed);
    const Tensor w_zp =
        w_type == DataType::kUInt8 ? RandomQ(w_type, {m}, ++seed) : Make<int8_t>({m}, std::vector<int8_t>(m, 0));
    const Tensor w_scale = RandomTensor(DataType::kFloat, {m}, ++seed, 0.001, 0.01);
    const Tensor bias = RandomTensor(DataType::kInt32, {m}, ++seed, -5000, 5000);
    const float x_scale = 0.02f, y_scale = 0.05f;
    const auto [shape, sums] = NaiveIntConv(c, x, w, -3, Ints(w_zp));
    const int64_t per_channel = shape.SizeFrom(2);
    std::vector<int8_t> expected(sums.size());
    for (size_t i = 0; i < sums.size(); ++i) {
      const int64_t oc = (static_cast<int64_t>(i) / per_channel) % m;
      const float multiplier = x_scale * w_scale.Data<float>()[oc] / y_scale;
      expected[i] = NaiveQuantize<int8_t>(static_cast<float>(sums[i] + bias.Data<int32_t>()[oc]) * multiplier, 5);
    }
    OpTester t("QLinearConv", 10);
    AddGeometry(t, c);
    t.Input("x", x).Input("x_scale", Make<float>({}, {x_scale})).Input("x_zero_point", Make<int8_t>({}, {-3}));
    t.Input("w", w, /*constant=*/true).Input("w_scale", w_scale).Input("w_zero_point", w_zp);
    t.Input("y_scale", Make<float>({}, {y_scale})).Input("y_zero_point", Make<int8_t>({}, {5})).Input("B", bias);
    t.Output("y", Make<int8_t>(shape, expected)).Run();
  }
}

TEST(QLinearConvTest, MatchesNaiveRequantizationWithBias) {
  CheckQLinearConv(DataType::kUInt8, 60);
  CheckQLinearConv(DataType::kInt8, 70);
}

}  // namespace
}  // namespace tessera::test
