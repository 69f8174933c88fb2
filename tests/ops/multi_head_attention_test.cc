// com.microsoft MultiHeadAttention (and com.microsoft Attention, which the session expands into a projection and a
// MultiHeadAttention) against a reference written from the ops' descriptions, computed in double: Q/K/V
// given separately, packed Q/K/V, packed K/V and keys/values already in heads; the input-projection bias; the key
// padding mask in its three supported forms; attention_bias; past/present keys and values; unidirectional; float16;
// and the errors for forms that are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ops/op_tester.h"

namespace tessera::test {
namespace {

struct Dims {
  int64_t b = 2, n = 2, s = 3, l = 3, past = 0, h = 4, hv = 4;
  int64_t total() const { return past + l; }
};

double F(const Tensor& t, int64_t i) { return t.Data<float>()[i]; }

// Y [B, S, N*Hv] from Q [B, S, N*H], K [B, L, N*H], V [B, L, N*Hv] (plus bias, past, masks), in double.
struct Reference {
  Reference(const Dims& dims, const Tensor* q_in, const Tensor* k_in, const Tensor* v_in,
            const Tensor* bias_in = nullptr, const Tensor* past_k_in = nullptr, const Tensor* past_v_in = nullptr)
      : d(dims), q(q_in), k(k_in), v(v_in), bias(bias_in), past_k(past_k_in), past_v(past_v_in) {}
  Dims d;
  const Tensor *q, *k, *v;
  const Tensor* bias;
  const Tensor *past_k, *past_v;
  std::function<double(int64_t b, int64_t n, int64_t i, int64_t j)> added;  // mask_filter or attention_bias terms
  bool unidirectional = false;
  double mask_filter = -10000.0;

  double Bias(int64_t offset) const { return bias ? F(*bias, offset) : 0.0; }
  double Key(int64_t b, int64_t n, int64_t j, int64_t f) const {
    if (j < d.past) return F(*past_k, ((b * d.n + n) * d.past + j) * d.h + f);
    return F(*k, (b * d.l + j - d.past) * d.n * d.h + n * d.h + f) + Bias(d.n * d.h + n * d.h + f);
  }
  double Value(int64_t b, int64_t n, int64_t j, int64_t f) const {
    if (j < d.past) return F(*past_v, ((b * d.n + n) * d.past + j) * d.hv + f);
    return F(*v, (b * d.l + j - d.past) * d.n * d.hv + n * d.hv + f) + Bias(2 * d.n * d.h + n * d.hv + f);
  }
  Tensor Output() const {
    Tensor y = Tensor::Allocate(DataType::kFloat, {d.b, d.s, d.n * d.hv});
    const int64_t t = d.total();
    for (int64_t b = 0; b < d.b; ++b)
      for (int64_t n = 0; n < d.n; ++n)
        for (int64_t i = 0; i < d.s; ++i) {
          std::vector<double> p(static_cast<size_t>(t));
          double max = -1e300, sum = 0;
          for (int64_t j = 0; j < t; ++j) {
            double dot = 0;
            for (int64_t f = 0; f < d.h; ++f)
              dot += (F(*q, (b * d.s + i) * d.n * d.h + n * d.h + f) + Bias(n * d.h + f)) * Key(b, n, j, f);
            double score = dot / std::sqrt(double(d.h));
            if (added) score += added(b, n, i, j);
            if (unidirectional && j > i + d.past) score += mask_filter;
            p[static_cast<size_t>(j)] = score;
            max = std::max(max, score);
          }
          for (double& x : p) sum += (x = std::exp(x - max));
          for (int64_t f = 0; f < d.hv; ++f) {
            double acc = 0;
            for (int64_t j = 0; j < t; ++j) acc += p[static_cast<size_t>(j)] / sum * Value(b, n, j, f);
            y.Data<float>()[(b * d.s + i) * d.n * d.hv + n * d.hv + f] = static_cast<float>(acc);
          }
        }
    return y;
  }
  // present_key / present_value [B, N, T, H / Hv].
  Tensor Present(bool values) const {
    const int64_t t = d.total(), f_len = values ? d.hv : d.h;
    Tensor out = Tensor::Allocate(DataType::kFloat, {d.b, d.n, t, f_len});
    for (int64_t b = 0; b < d.b; ++b)
      for (int64_t n = 0; n < d.n; ++n)
        for (int64_t j = 0; j < t; ++j)
          for (int64_t f = 0; f < f_len; ++f)
            out.Data<float>()[((b * d.n + n) * t + j) * f_len + f] =
                static_cast<float>(values ? Value(b, n, j, f) : Key(b, n, j, f));
    return out;
  }
};

// [B, L, N*F] rearranged into packed [B, L, N, parts, F] at `part`.
void Pack(const Tensor& x, Tensor& packed, int64_t n, int64_t f, int64_t part, int64_t parts) {
  const int64_t rows = x.shape()[0] * x.shape()[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < n; ++h)
      for (int64_t e = 0; e < f; ++e)
        packed.Data<float>()[((r * n + h) * parts + part) * f + e] = x.Data<float>()[(r * n + h) * f + e];
}

// [B, L, N*F] as [B, N, L, F].
Tensor ToHeads(const Tensor& x, int64_t n, int64_t f) {
  const int64_t b_len = x.shape()[0], l = x.shape()[1];
  Tensor out = Tensor::Allocate(DataType::kFloat, {b_len, n, l, f});
  for (int64_t b = 0; b < b_len; ++b)
    for (int64_t j = 0; j < l; ++j)
      for (int64_t h = 0; h < n; ++h)
        for (int64_t e = 0; e < f; ++e)
          out.Data<float>()[((b * n + h) * l + j) * f + e] = x.Data<float>()[((b * l + j) * n + h) * f + e];
  return out;
}

struct Operands {
  Dims d;
  Tensor q, k, v, bias;
  explicit Operands(Dims dims, uint32_t seed = 1) : d(dims) {
    q = RandomTensor(DataType::kFloat, {d.b, d.s, d.n * d.h}, seed, -1, 1);
    k = RandomTensor(DataType::kFloat, {d.b, d.l, d.n * d.h}, seed + 1, -1, 1);
    v = RandomTensor(DataType::kFloat, {d.b, d.l, d.n * d.hv}, seed + 2, -1, 1);
    bias = RandomTensor(DataType::kFloat, {2 * d.n * d.h + d.n * d.hv}, seed + 3, -0.5, 0.5);
  }
};

OpTester Mha(const Dims& d) {
  OpTester t("MultiHeadAttention", 1, "com.microsoft");
  t.Attr("num_heads", d.n);
  t.Tolerance(2e-5, 2e-5);
  return t;
}

TEST(MultiHeadAttentionTest, SeparateQueryKeyValueWithAndWithoutBias) {
  for (bool with_bias : {false, true}) {
    Dims d;
    d.l = 5;
    d.hv = 3;
    Operands o(d, 10);
    Reference ref(d, &o.q, &o.k, &o.v, with_bias ? &o.bias : nullptr);
    OpTester t = Mha(d);
    t.Input("query", o.q).Input("key", o.k).Input("value", o.v);
    if (with_bias) t.Input("bias", o.bias, true);
    t.Output("output", ref.Output()).Run({"cpu"});
  }
}

TEST(MultiHeadAttentionTest, PackedQueryKeyValueAndPackedKeyValue) {
  Dims d;  // packing needs S = L and H = Hv
  Operands o(d, 20);
  Reference ref(d, &o.q, &o.k, &o.v, &o.bias);
  Tensor qkv = Tensor::Allocate(DataType::kFloat, {d.b, d.l, d.n, 3, d.h});
  Pack(o.q, qkv, d.n, d.h, 0, 3);
  Pack(o.k, qkv, d.n, d.h, 1, 3);
  Pack(o.v, qkv, d.n, d.h, 2, 3);
  OpTester packed = Mha(d);
  packed.Input("query", qkv).OmittedInput().OmittedInput().Input("bias", o.bias, true);
  packed.Output("output", ref.Output()).Run({"cpu"});

  Tensor kv = Tensor::Allocate(DataType::kFloat, {d.b, d.l, d.n, 2, d.h});
  Pack(o.k, kv, d.n, d.h, 0, 2);
  Pack(o.v, kv, d.n, d.h, 1, 2);
  OpTester packed_kv = Mha(d);
  packed_kv.Input("query", o.q).Input("key", kv).OmittedInput().Input("bias", o.bias, true);
  packed_kv.Output("output", ref.Output()).Run({"cpu"});
}

TEST(MultiHeadAttentionTest, KeysAndValuesAlreadyInHeads) {
  Dims d;
  d.l = 6;  // cross attention: more keys than queries
  Operands o(d, 30);
  Reference ref(d, &o.q, &o.k, &o.v);
  OpTester t = Mha(d);
  t.Input("query", o.q).Input("key", ToHeads(o.k, d.n, d.h)).Input("value", ToHeads(o.v, d.n, d.hv));
  t.Output("output", ref.Output()).Run({"cpu"});
}

TEST(MultiHeadAttentionTest, PastAndPresentWithUnidirectionalMasking) {
  Dims d;
  d.s = d.l = 2;
  d.past = 3;
  Operands o(d, 40);
  const Tensor past_k = RandomTensor(DataType::kFloat, {d.b, d.n, d.past, d.h}, 44);
  const Tensor past_v = RandomTensor(DataType::kFloat, {d.b, d.n, d.past, d.hv}, 45);
  Reference ref(d, &o.q, &o.k, &o.v, &o.bias, &past_k, &past_v);
  ref.unidirectional = true;
  OpTester t = Mha(d);
  t.Attr("unidirectional", int64_t{1});
  t.Input("query", o.q).Input("key", o.k).Input("value", o.v).Input("bias", o.bias, true);
  t.OmittedInput().OmittedInput().Input("past_key", past_k).Input("past_value", past_v);
  t.Output("output", ref.Output()).Output("present_key", ref.Present(false)).Output("present_value", ref.Present(true));
  t.Run({"cpu"});
}

TEST(MultiHeadAttentionTest, KeyPaddingMasksAndAttentionBias) {
  Dims d;
  d.l = 4;
  Operands o(d, 50);
  const std::vector<int32_t> lengths = {2, 4};
  const Tensor lengths_mask = Tensor::FromVector<int32_t>({d.b}, lengths);
  std::vector<int32_t> keep(static_cast<size_t>(d.b * d.l)), keep3(static_cast<size_t>(d.b * d.s * d.l));
  for (int64_t b = 0; b < d.b; ++b)
    for (int64_t j = 0; j < d.l; ++j) keep[static_cast<size_t>(b * d.l + j)] = (j + b) % 3 != 0;
  for (size_t i = 0; i < keep3.size(); ++i) keep3[i] = (i * 7 + 1) % 4 != 0;
  const Tensor attention_bias = RandomTensor(DataType::kFloat, {1, d.n, d.s, d.l}, 55, -1, 1);
  struct Form {
    Tensor mask;
    std::function<bool(int64_t b, int64_t i, int64_t j)> padded;
  };
  const std::vector<Form> forms = {
      {lengths_mask, [&](int64_t b, int64_t, int64_t j) { return j >= lengths[static_cast<size_t>(b)]; }},
      {Tensor::FromVector<int32_t>({d.b, d.l}, keep),
       [&](int64_t b, int64_t, int64_t j) { return keep[static_cast<size_t>(b * d.l + j)] == 0; }},
      {Tensor::FromVector<int32_t>({d.b, d.s, d.l}, keep3),
       [&](int64_t b, int64_t i, int64_t j) { return keep3[static_cast<size_t>((b * d.s + i) * d.l + j)] == 0; }},
  };
  for (const Form& form : forms) {
    Reference ref(d, &o.q, &o.k, &o.v);
    ref.added = [&](int64_t b, int64_t n, int64_t i, int64_t j) {
      return (form.padded(b, i, j) ? -10000.0 : 0.0) + F(attention_bias, (n * d.s + i) * d.l + j);
    };
    OpTester t = Mha(d);
    t.Input("query", o.q).Input("key", o.k).Input("value", o.v).OmittedInput();
    t.Input("key_padding_mask", form.mask).Input("attention_bias", attention_bias);
    t.Output("output", ref.Output()).Run({"cpu"});
  }
}

TEST(MultiHeadAttentionTest, Float16MatchesFloat32) {
  Dims d;
  Operands o(d, 60);
  OpTester t = Mha(d);
  t.Input("query", o.q).Input("key", o.k).Input("value", o.v).Input("bias", o.bias, true).OutputName("output");
  const Tensor want = t.RunOn("cpu")[0];
  const auto half = [](const Tensor& x) {
    Tensor out = Tensor::Allocate(DataType::kFloat16, x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) out.Data<Float16>()[i] = ToFloat16(x.Data<float>()[i]);
    return out;
  };
  OpTester h = Mha(d);
  h.Input("query", half(o.q)).Input("key", half(o.k)).Input("value", half(o.v)).Input("bias", half(o.bias), true);
  h.OutputName("output");
  const Tensor got = h.RunOn("cpu")[0];
  ASSERT_EQ(got.type(), DataType::kFloat16);
  for (int64_t i = 0; i < want.NumElements(); ++i)
    EXPECT_NEAR(ToFloat(got.Data<Float16>()[i]), want.Data<float>()[i], 5e-3) << i;
}

TEST(MultiHeadAttentionTest, RefusedFormsAndBadShapesAreNamed) {
  Dims d;
  Operands o(d, 70);
  OpTester wrong_key = Mha(d);
  wrong_key.Input("query", o.q).Input("key", RandomTensor(DataType::kFloat, {d.b, d.l, 3}, 71)).Input("value", o.v);
  wrong_key.OutputName("output").ExpectFailure("do not match query").Run({"cpu"});
  OpTester legacy_mask = Mha(d);
  legacy_mask.Input("query", o.q).Input("key", o.k).Input("value", o.v).OmittedInput();
  legacy_mask.Input("key_padding_mask", Tensor::FromVector<int32_t>({3 * d.b + 2}, std::vector<int32_t>(8, 1)));
  legacy_mask.OutputName("output").ExpectFailure("3 * batch + 2").Run({"cpu"});
  OpTester qk = Mha(d);
  qk.Input("query", o.q).Input("key", o.k).Input("value", o.v);
  qk.OutputName("output").OmittedOutput().OmittedOutput().OutputName("qk").ExpectFailure("output 3 (qk)").Run({"cpu"});
  OpTester no_key = Mha(d);
  no_key.Input("query", o.q).OutputName("output").ExpectFailure("key is required").Run({"cpu"});
}

// com.microsoft Attention: expanded at load into MatMul + Slice + MultiHeadAttention (+ Gather / Concat for the
// combined past and present), checked against the same reference on the projected Q, K and V.
Tensor Project(const Tensor& input, const Tensor& weights, int64_t first, int64_t width) {
  const int64_t rows = input.shape()[0] * input.shape()[1], in = input.shape()[2], all = weights.shape()[1];
  Tensor out = Tensor::Allocate(DataType::kFloat, {input.shape()[0], input.shape()[1], width});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c) {
      double acc = 0;
      for (int64_t e = 0; e < in; ++e) acc += F(input, r * in + e) * F(weights, e * all + first + c);
      out.Data<float>()[r * width + c] = static_cast<float>(acc);
    }
  return out;
}

TEST(ContribAttentionTest, ExpandsIntoTheProjectionAndMultiHeadAttention) {
  for (bool with_past : {false, true}) {
    Dims d;
    d.s = d.l = 3;
    d.past = with_past ? 2 : 0;
    const int64_t in = 5, width = d.n * d.h;
    const Tensor input = RandomTensor(DataType::kFloat, {d.b, d.s, in}, 80, -1, 1);
    const Tensor weights = RandomTensor(DataType::kFloat, {in, 3 * width}, 81, -0.5, 0.5);
    const Tensor bias = RandomTensor(DataType::kFloat, {3 * width}, 82, -0.5, 0.5);
    const Tensor q = Project(input, weights, 0, width), k = Project(input, weights, width, width),
                 v = Project(input, weights, 2 * width, width);
    const Tensor past = RandomTensor(DataType::kFloat, {2, d.b, d.n, d.past, d.h}, 83);
    Tensor past_k = Tensor::Allocate(DataType::kFloat, {d.b, d.n, d.past, d.h});
    Tensor past_v = Tensor::Allocate(DataType::kFloat, {d.b, d.n, d.past, d.h});
    std::copy_n(past.Data<float>(), past_k.NumElements(), past_k.Data<float>());
    std::copy_n(past.Data<float>() + past_k.NumElements(), past_v.NumElements(), past_v.Data<float>());
    const std::vector<int32_t> lengths = {2, 3 + static_cast<int32_t>(d.past)};
    Reference ref(d, &q, &k, &v, &bias, with_past ? &past_k : nullptr, with_past ? &past_v : nullptr);
    ref.unidirectional = with_past;
    ref.added = [&](int64_t b, int64_t, int64_t, int64_t j) { return j >= lengths[static_cast<size_t>(b)] ? -10000.0 : 0.0; };

    OpTester t("Attention", 1, "com.microsoft");
    t.Attr("num_heads", d.n).Attr("unidirectional", int64_t{with_past ? 1 : 0}).Tolerance(2e-5, 2e-5);
    t.Input("input", input).Input("weights", weights, true).Input("bias", bias, true);
    t.Input("mask_index", Tensor::FromVector<int32_t>({d.b}, lengths));
    t.Output("output", ref.Output());
    if (with_past) {
      t.Input("past", past);
      const Tensor present_k = ref.Present(false), present_v = ref.Present(true);
      Tensor present = Tensor::Allocate(DataType::kFloat, {2, d.b, d.n, d.total(), d.h});
      std::copy_n(present_k.Data<float>(), present_k.NumElements(), present.Data<float>());
      std::copy_n(present_v.Data<float>(), present_v.NumElements(), present.Data<float>() + present_k.NumElements());
      t.Output("present", present);
    }
    t.Run({"cpu"});
  }
}

TEST(ContribAttentionTest, UnsupportedFormsAreRefusedNamingTheNode) {
  OpTester rotary("Attention", 1, "com.microsoft");
  rotary.Attr("num_heads", int64_t{2}).Attr("do_rotary", int64_t{1});
  rotary.Input("input", RandomTensor(DataType::kFloat, {1, 2, 4}, 90))
      .Input("weights", RandomTensor(DataType::kFloat, {4, 24}, 91), true)
      .OutputName("output")
      .ExpectFailure("do_rotary is not supported")
      .Run({"cpu"});
  OpTester uneven("Attention", 1, "com.microsoft");
  uneven.Attr("num_heads", int64_t{2}).Attr("qkv_hidden_sizes", std::vector<int64_t>{8, 4, 8});
  uneven.Input("input", RandomTensor(DataType::kFloat, {1, 2, 4}, 92))
      .Input("weights", RandomTensor(DataType::kFloat, {4, 20}, 93), true)
      .OutputName("output")
      .ExpectFailure("equal query and key widths")
      .Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
