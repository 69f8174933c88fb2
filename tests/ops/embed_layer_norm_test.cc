// com.microsoft EmbedLayerNormalization against a reference computed in double from the op's description: word,
// position and segment lookups, LayerNormalization, mask_index and embedding_sum, explicit position ids; float16;
// and an id outside its table.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

constexpr int64_t kB = 2, kS = 3, kH = 6;

struct Inputs {
  Tensor ids = Tensor::FromVector<int32_t>({kB, kS}, {1, 6, 0, 3, 3, 5});
  Tensor segment_ids = Tensor::FromVector<int32_t>({kB, kS}, {0, 1, 1, 0, 0, 1});
  Tensor words = RandomTensor(DataType::kFloat, {7, kH}, 1, -1, 1);
  Tensor positions = RandomTensor(DataType::kFloat, {5, kH}, 2, -1, 1);
  Tensor segments = RandomTensor(DataType::kFloat, {2, kH}, 3, -1, 1);
  Tensor gamma = RandomTensor(DataType::kFloat, {kH}, 4, 0.5, 1.5);
  Tensor beta = RandomTensor(DataType::kFloat, {kH}, 5, -0.5, 0.5);
  Tensor mask = Tensor::FromVector<int32_t>({kB, kS}, {1, 1, 0, 1, 1, 1});
  Tensor position_ids = Tensor::FromVector<int32_t>({1, kS}, {4, 2, 0});
};

struct Expected {
  Tensor output = Tensor::Allocate(DataType::kFloat, {kB, kS, kH});
  Tensor sum = Tensor::Allocate(DataType::kFloat, {kB, kS, kH});
  Tensor mask_index = Tensor::FromVector<int32_t>({kB}, {2, 3});
};

Expected Reference(const Inputs& in, bool explicit_positions) {
  Expected e;
  const auto f = [](const Tensor& t, int64_t row, int64_t col) { return double(t.Data<float>()[row * kH + col]); };
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t s = 0; s < kS; ++s) {
      const int64_t at = b * kS + s;
      const int64_t pos = explicit_positions ? in.position_ids.Data<int32_t>()[s] : s;
      std::vector<double> v(kH);
      double mean = 0, var = 0;
      for (int64_t c = 0; c < kH; ++c) {
        v[c] = f(in.words, in.ids.Data<int32_t>()[at], c) + f(in.positions, pos, c) +
               f(in.segments, in.segment_ids.Data<int32_t>()[at], c);
        e.sum.Data<float>()[at * kH + c] = static_cast<float>(v[c]);
        mean += v[c] / kH;
      }
      for (double x : v) var += (x - mean) * (x - mean) / kH;
      for (int64_t c = 0; c < kH; ++c)
        e.output.Data<float>()[at * kH + c] = static_cast<float>(
            (v[c] - mean) / std::sqrt(var + 1e-12) * in.gamma.Data<float>()[c] + in.beta.Data<float>()[c]);
    }
  return e;
}

OpTester Embed(const Inputs& in, bool explicit_positions) {
  OpTester t("EmbedLayerNormalization", 1, "com.microsoft");
  t.Input("input_ids", in.ids).Input("segment_ids", in.segment_ids);
  t.Input("word_embedding", in.words, true).Input("position_embedding", in.positions, true);
  t.Input("segment_embedding", in.segments, true).Input("gamma", in.gamma, true).Input("beta", in.beta, true);
  t.Input("mask", in.mask);
  if (explicit_positions) t.Input("position_ids", in.position_ids);
  return t;
}

TEST(EmbedLayerNormTest, MatchesTheReferenceWithEveryOutput) {
  const Inputs in;
  for (bool explicit_positions : {false, true}) {
    const Expected e = Reference(in, explicit_positions);
    OpTester t = Embed(in, explicit_positions);
    t.Output("output", e.output).Output("mask_index", e.mask_index).Output("embedding_sum", e.sum);
    t.Tolerance(1e-5, 1e-5).Run({"cpu"});
  }
}

TEST(EmbedLayerNormTest, Float16MatchesFloat32) {
  Inputs in;
  const Expected e = Reference(in, false);
  const auto half = [](const Tensor& x) {
    Tensor out = Tensor::Allocate(DataType::kFloat16, x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) out.Data<Float16>()[i] = ToFloat16(x.Data<float>()[i]);
    return out;
  };
  for (Tensor* t : {&in.words, &in.positions, &in.segments, &in.gamma, &in.beta}) *t = half(*t);
  OpTester t = Embed(in, false);
  t.OutputName("output");
  const Tensor got = t.RunOn("cpu")[0];
  ASSERT_EQ(got.type(), DataType::kFloat16);
  for (int64_t i = 0; i < got.NumElements(); ++i)
    EXPECT_NEAR(ToFloat(got.Data<Float16>()[i]), e.output.Data<float>()[i], 2e-2) << i;
}

TEST(EmbedLayerNormTest, AnIdOutsideItsTableIsNamed) {
  Inputs in;
  in.ids = Tensor::FromVector<int32_t>({kB, kS}, {1, 7, 0, 3, 3, 5});
  OpTester t = Embed(in, false);
  t.OutputName("output").ExpectFailure("input id 7 is outside its embedding table of 7 rows").Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
