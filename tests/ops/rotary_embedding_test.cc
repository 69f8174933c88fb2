// RotaryEmbedding (ai.onnx opset 23 and com.microsoft) against a reference written from the spec's formula:
// for feature pairs (x1, x2) of each head, out1 = cos*x1 - sin*x2, out2 = sin*x1 + cos*x2.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

// Caches [max_position, half] of cos/sin(position / 10000^(2j / rot)).
std::pair<Tensor, Tensor> Caches(int64_t max_position, int64_t half) {
  Tensor c = Tensor::Allocate(DataType::kFloat, {max_position, half});
  Tensor s = Tensor::Allocate(DataType::kFloat, {max_position, half});
  for (int64_t p = 0; p < max_position; ++p)
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(j) / (2.0 * half));
      c.Data<float>()[p * half + j] = static_cast<float>(std::cos(angle));
      s.Data<float>()[p * half + j] = static_cast<float>(std::sin(angle));
    }
  return {c, s};
}

// x as [batch, seq, heads, head] (`heads_first`: [batch, heads, seq, head]); positions[b * seq + s].
Tensor Reference(const Tensor& x, bool heads_first, int64_t heads, const std::vector<int64_t>& positions,
                 const Tensor& cos, const Tensor& sin, int64_t rot, bool interleaved) {
  Tensor y = Tensor::Allocate(DataType::kFloat, x.shape());
  const int64_t batch = x.shape()[0];
  const int64_t seq = heads_first ? x.shape()[2] : x.shape()[1];
  const int64_t head = x.NumElements() / (batch * seq * heads);
  const int64_t half = rot / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = heads_first ? ((b * heads + h) * seq + s) * head : ((b * seq + s) * heads + h) * head;
        const float* in = x.Data<float>() + base;
        float* out = y.Data<float>() + base;
        for (int64_t d = 0; d < head; ++d) out[d] = in[d];
        const int64_t p = positions[static_cast<size_t>(b * seq + s)];
        for (int64_t j = 0; j < half; ++j) {
          const int64_t a = interleaved ? 2 * j : j, bb = interleaved ? 2 * j + 1 : j + half;
          const double c = cos.Data<float>()[p * half + j], sn = sin.Data<float>()[p * half + j];
          out[a] = static_cast<float>(c * in[a] - sn * in[bb]);
          out[bb] = static_cast<float>(sn * in[a] + c * in[bb]);
        }
      }
  return y;
}

TEST(RotaryEmbeddingTest, FourDimensionalWithPositionIds) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 4, 8}, 1);  // [batch, heads, seq, head]
  auto [cos, sin] = Caches(16, 4);
  const std::vector<int64_t> positions = {0, 5, 2, 9, 1, 1, 3, 15};
  for (bool interleaved : {false, true}) {
    SCOPED_TRACE(interleaved);
    OpTester t("RotaryEmbedding", 23);
    t.Attr("interleaved", int64_t{interleaved});
    t.Input("X", x).Input("cos_cache", cos).Input("sin_cache", sin);
    t.Input("position_ids", Tensor::FromVector<int64_t>({2, 4}, positions));
    t.Output("Y", Reference(x, true, 3, positions, cos, sin, 8, interleaved)).Tolerance(1e-6, 1e-5);
    t.Run();
  }
}

TEST(RotaryEmbeddingTest, ThreeDimensionalPartialRotationWithoutPositionIds) {
  const Tensor x = RandomTensor(DataType::kFloat, {1, 3, 2 * 6}, 2);  // 2 heads of 6, rotate the first 4
  auto [cos_table, sin_table] = Caches(3, 2);
  // Without position_ids the caches are [batch, seq, rot/2]: the table's rows 0..2 for batch 0.
  const Tensor cos = cos_table.Reshaped({1, 3, 2}), sin = sin_table.Reshaped({1, 3, 2});
  OpTester t("RotaryEmbedding", 23);
  t.Attr("num_heads", int64_t{2}).Attr("rotary_embedding_dim", int64_t{4});
  t.Input("X", x).Input("cos_cache", cos).Input("sin_cache", sin);
  t.Output("Y", Reference(x, false, 2, {0, 1, 2}, cos_table, sin_table, 4, false)).Tolerance(1e-6, 1e-5);
  t.Run();
}

TEST(RotaryEmbeddingTest, ContribOpWithStartPosition) {
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 2 * 4}, 3);
  auto [cos, sin] = Caches(10, 2);
  OpTester t("RotaryEmbedding", 1, "com.microsoft");
  t.Attr("num_heads", int64_t{2});
  t.Input("input", x).Input("position_ids", Tensor::FromVector<int64_t>({1}, {4}));
  t.Input("cos_cache", cos).Input("sin_cache", sin);
  t.Output("Y", Reference(x, false, 2, {4, 5, 6, 4, 5, 6}, cos, sin, 4, false)).Tolerance(1e-6, 1e-5);
  t.Run();
}

TEST(RotaryEmbeddingTest, Float16MatchesFloat) {
  const Tensor x = RandomTensor(DataType::kFloat16, {1, 2, 3, 4}, 4);
  auto [cos, sin] = Caches(3, 2);
  OpTester t("RotaryEmbedding", 23);
  t.Input("X", x).Input("cos_cache", RandomTensor(DataType::kFloat16, {3, 2}, 5));
  t.Input("sin_cache", RandomTensor(DataType::kFloat16, {3, 2}, 6));
  t.Input("position_ids", Tensor::FromVector<int64_t>({1, 3}, {2, 0, 1}));
  t.OutputName("Y").Tolerance(1e-3, 1e-2);
  const std::vector<Tensor> out = t.RunOn("cpu");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type(), DataType::kFloat16);
  EXPECT_EQ(out[0].shape().ToString(), x.shape().ToString());
}

TEST(RotaryEmbeddingTest, PositionOutsideTheCacheIsAnError) {
  auto [cos, sin] = Caches(4, 2);
  OpTester t("RotaryEmbedding", 23);
  t.Input("X", RandomTensor(DataType::kFloat, {1, 1, 2, 4}, 7)).Input("cos_cache", cos).Input("sin_cache", sin);
  t.Input("position_ids", Tensor::FromVector<int64_t>({1, 2}, {0, 4}));
  t.OutputName("Y").ExpectFailure("position 4 (batch 0, token 1) is outside the caches' 4 rows");
  t.Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
