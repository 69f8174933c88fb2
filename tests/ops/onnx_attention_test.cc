// Attention (ai.onnx opset 23) against a reference written from the spec's formulas, computed in double:
// multi-head and grouped-query heads, 3-D and 4-D operands, bool and additive masks (a mask shorter than the
// keys masks the rest), causal masking offset by the past, the key/value cache outputs, softcap and the
// qk_matmul_output modes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

struct Case {
  int64_t batch = 1, hq = 2, hkv = 2, s = 3, l = 3, past = 0, d = 4, dv = 4;
  bool three_d = false, causal = false;
  float softcap = 0.0f;
  int64_t mode = 0;
  std::optional<float> scale;
  bool qk_output = true;  // the scores output (the GEMM path of the attention core is taken only without it)
};

// [B, H, P, F] element (b, h, p, f) of a 4-D tensor, or of a 3-D [B, P, H*F] one.
double At(const Tensor& t, bool three_d, int64_t heads, int64_t b, int64_t h, int64_t p, int64_t f) {
  const Shape& s = t.shape();
  if (!three_d) return t.Data<float>()[((b * s[1] + h) * s[2] + p) * s[3] + f];
  const int64_t features = s[2] / heads;
  return t.Data<float>()[(b * s[1] + p) * s[2] + h * features + f];
}

struct Expected {
  Tensor y, present_k, present_v, qk;
};

Expected Reference(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                   const Tensor* past_k, const Tensor* past_v) {
  const int64_t total = c.past + c.l;
  Expected e;
  e.present_k = Tensor::Allocate(DataType::kFloat, {c.batch, c.hkv, total, c.d});
  e.present_v = Tensor::Allocate(DataType::kFloat, {c.batch, c.hkv, total, c.dv});
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.hkv; ++h)
      for (int64_t j = 0; j < total; ++j) {
        for (int64_t f = 0; f < c.d; ++f)
          e.present_k.Data<float>()[((b * c.hkv + h) * total + j) * c.d + f] = static_cast<float>(
              j < c.past ? At(*past_k, false, c.hkv, b, h, j, f) : At(k, c.three_d, c.hkv, b, h, j - c.past, f));
        for (int64_t f = 0; f < c.dv; ++f)
          e.present_v.Data<float>()[((b * c.hkv + h) * total + j) * c.dv + f] = static_cast<float>(
              j < c.past ? At(*past_v, false, c.hkv, b, h, j, f) : At(v, c.three_d, c.hkv, b, h, j - c.past, f));
      }
  e.y = Tensor::Allocate(DataType::kFloat, c.three_d ? Shape{c.batch, c.s, c.hq * c.dv} : Shape{c.batch, c.hq, c.s, c.dv});
  e.qk = Tensor::Allocate(DataType::kFloat, {c.batch, c.hq, c.s, total});
  const double scale = c.scale ? *c.scale : 1.0 / std::sqrt(double(c.d));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.s; ++i) {
        const int64_t hk = h / (c.hq / c.hkv);
        std::vector<double> score(static_cast<size_t>(total));
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (int64_t f = 0; f < c.d; ++f)
            dot += At(q, c.three_d, c.hq, b, h, i, f) * e.present_k.Data<float>()[((b * c.hkv + hk) * total + j) * c.d + f];
          double x = dot * scale;
          if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
          if (c.mode == 0) e.qk.Data<float>()[((b * c.hq + h) * c.s + i) * total + j] = static_cast<float>(x);
          if (mask) {  // [S, T'] bool or [B, 1, S, T'] float in these cases
            const int64_t width = mask->shape()[mask->shape().rank() - 1];
            if (j >= width) {
              x = -INFINITY;
            } else if (mask->type() == DataType::kBool) {
              if (!mask->Data<bool>()[i * width + j]) x = -INFINITY;
            } else {
              x += mask->Data<float>()[(b * c.s + i) * width + j];
            }
          }
          if (c.causal && j > i + c.past) x = -INFINITY;
          score[static_cast<size_t>(j)] = x;
        }
        double max = -INFINITY, sum = 0;
        for (double x : score) max = std::max(max, x);
        for (double& x : score) sum += (x = std::exp(x - max));
        for (int64_t f = 0; f < c.dv; ++f) {
          double acc = 0;
          for (int64_t j = 0; j < total; ++j)
            acc += score[static_cast<size_t>(j)] / sum * e.present_v.Data<float>()[((b * c.hkv + hk) * total + j) * c.dv + f];
          const int64_t at = c.three_d ? (b * c.s + i) * c.hq * c.dv + h * c.dv + f : ((b * c.hq + h) * c.s + i) * c.dv + f;
          e.y.Data<float>()[at] = static_cast<float>(acc);
        }
        if (c.mode == 3)
          for (int64_t j = 0; j < total; ++j)
            e.qk.Data<float>()[((b * c.hq + h) * c.s + i) * total + j] = static_cast<float>(score[static_cast<size_t>(j)] / sum);
      }
  return e;
}

void Check(const Case& c, const Tensor* mask, uint32_t seed) {
  const Tensor q = RandomTensor(DataType::kFloat, c.three_d ? Shape{c.batch, c.s, c.hq * c.d} : Shape{c.batch, c.hq, c.s, c.d}, seed);
  const Tensor k = RandomTensor(DataType::kFloat, c.three_d ? Shape{c.batch, c.l, c.hkv * c.d} : Shape{c.batch, c.hkv, c.l, c.d}, seed + 1);
  const Tensor v = RandomTensor(DataType::kFloat, c.three_d ? Shape{c.batch, c.l, c.hkv * c.dv} : Shape{c.batch, c.hkv, c.l, c.dv}, seed + 2);
  const Tensor past_k = RandomTensor(DataType::kFloat, {c.batch, c.hkv, c.past, c.d}, seed + 3);
  const Tensor past_v = RandomTensor(DataType::kFloat, {c.batch, c.hkv, c.past, c.dv}, seed + 4);
  const bool has_past = c.past > 0;
  const Expected e = Reference(c, q, k, v, mask, has_past ? &past_k : nullptr, has_past ? &past_v : nullptr);
  OpTester t("Attention", 23);
  if (c.three_d) t.Attr("q_num_heads", c.hq).Attr("kv_num_heads", c.hkv);
  if (c.causal) t.Attr("is_causal", int64_t{1});
  if (c.softcap > 0) t.Attr("softcap", c.softcap);
  if (c.scale) t.Attr("scale", *c.scale);
  t.Attr("qk_matmul_output_mode", c.mode);
  t.Input("Q", q).Input("K", k).Input("V", v);
  if (mask) t.Input("attn_mask", *mask); else t.OmittedInput();
  if (has_past) t.Input("past_key", past_k).Input("past_value", past_v);
  t.Output("Y", e.y).Output("present_key", e.present_k).Output("present_value", e.present_v);
  if (c.qk_output) t.Output("qk", e.qk);
  t.Tolerance(1e-5, 1e-4).Run({"cpu"});
}

TEST(OnnxAttentionTest, MultiHeadFourDimensional) {
  Check(Case{}, nullptr, 1);
}

TEST(OnnxAttentionTest, GroupedQueryThreeDimensionalWithBoolMask) {
  Case c;
  c.three_d = true;
  c.hq = 4;
  c.hkv = 2;
  c.batch = 2;
  c.l = 5;
  c.dv = 3;
  c.scale = 0.7f;
  c.mode = 3;
  std::vector<bool> keep(static_cast<size_t>(c.s * c.l), true);
  keep[1] = keep[7] = keep[13] = false;
  const Tensor mask = Tensor::FromVector<bool>({c.s, c.l}, keep);
  Check(c, &mask, 10);
}

TEST(OnnxAttentionTest, CausalWithPastShortFloatMaskAndSoftcap) {
  Case c;
  c.past = 2;
  c.l = 2;
  c.s = 2;
  c.causal = true;
  c.softcap = 1.5f;
  const Tensor mask = RandomTensor(DataType::kFloat, {1, 1, c.s, c.past + c.l - 1}, 20);  // last key padded
  Check(c, &mask, 20);
}

// 8+ queries and keys in float32 take the GEMM path of the attention core (attention_core.h).
TEST(OnnxAttentionTest, LongerSequencesThroughTheGemmPath) {
  Case c;
  c.batch = 2, c.hq = 4, c.hkv = 2, c.s = 10, c.l = 10, c.past = 3, c.d = 8, c.dv = 6, c.causal = true;
  c.qk_output = false;
  const Tensor mask = RandomTensor(DataType::kFloat, {c.batch, 1, c.s, c.past + c.l - 2}, 30);  // last 2 keys padded
  Check(c, &mask, 30);
  Case plain;
  plain.s = 16, plain.l = 12, plain.three_d = true, plain.scale = 0.5f, plain.qk_output = false;
  Check(plain, nullptr, 31);
  Case causal;  // two blocks of queries: the first stops at key past + 64
  causal.batch = 1, causal.s = 70, causal.l = 70, causal.past = 5, causal.d = 8, causal.dv = 8, causal.causal = true,
  causal.qk_output = false;
  Check(causal, nullptr, 32);
}

// Opset 24 added a seventh input, nonpad_kv_seqlen (the valid lengths of a padded key/value cache); a model that
// gives it is refused by name rather than run as if it were absent. Without it, opsets 24 and 25 run as 23.
TEST(OnnxAttentionTest, Opset24NonpadKvSeqlenIsRefusedAndOtherwiseOpset23Semantics) {
  const auto build = [](OpTester& t, bool lengths) {
    t.Input("Q", RandomTensor(DataType::kFloat, {1, 2, 3, 4}, 1)).Input("K", RandomTensor(DataType::kFloat, {1, 2, 3, 4}, 2));
    t.Input("V", RandomTensor(DataType::kFloat, {1, 2, 3, 4}, 3));
    if (lengths) {
      t.OmittedInput().OmittedInput().OmittedInput();  // attn_mask, past_key, past_value
      t.Input("nonpad_kv_seqlen", Tensor::FromVector<int64_t>({1}, {2}));
    }
    t.OutputName("Y");
  };
  OpTester refused("Attention", 24);
  build(refused, true);
  refused.ExpectFailure("nonpad_kv_seqlen").Run({"cpu"});
  OpTester v23("Attention", 23), v25("Attention", 25);
  build(v23, false);
  build(v25, false);
  const std::vector<Tensor> a = v23.RunOn("cpu"), b = v25.RunOn("cpu");
  EXPECT_EQ(CompareTensors(a[0], b[0], 0, 0), "");
}

TEST(OnnxAttentionTest, MismatchedHeadsAreAnError) {
  OpTester t("Attention", 23);
  t.Input("Q", RandomTensor(DataType::kFloat, {1, 3, 2, 4}, 1)).Input("K", RandomTensor(DataType::kFloat, {1, 2, 2, 4}, 2));
  t.Input("V", RandomTensor(DataType::kFloat, {1, 2, 2, 4}, 3)).OutputName("Y");
  t.ExpectFailure("3 query heads are not a multiple of 2").Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
