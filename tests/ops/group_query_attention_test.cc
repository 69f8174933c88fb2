// com.microsoft GroupQueryAttention against a reference written from the op's semantics (computed in double), the
// semantics the CPU kernel was checked for against ONNX Runtime 1.30 (nn/group_query_attention.cc): prompts with
// and without right padding, packed QKV, rotary (interleaved, partial), decoding with an exact or a longer (shared)
// past, a later prompt after a cached one, local windows, softcap; the present caches, written in place when bound
// over the past; and the errors for what does not fit or is not supported.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_tester.h"
#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

struct Case {
  int64_t batch = 1, s = 1, nq = 4, nkv = 2, head = 8;
  int64_t past_rows = -1;  // -1: no past inputs
  std::vector<int32_t> seqlens;
  int32_t total = 0;
  bool packed = false;
  int64_t rotary = 0;  // rotary dim (0: none)
  bool interleaved = false;
  int64_t window = -1;
  float softcap = 0.0f;
};

struct Data {
  Tensor query, key, value, past_k, past_v, cos, sin;
};

Data MakeData(const Case& c, uint32_t seed) {
  Data d;
  const int64_t width = c.packed ? (c.nq + 2 * c.nkv) * c.head : c.nq * c.head;
  d.query = RandomTensor(DataType::kFloat, {c.batch, c.s, width}, seed);
  if (!c.packed) {
    d.key = RandomTensor(DataType::kFloat, {c.batch, c.s, c.nkv * c.head}, seed + 1);
    d.value = RandomTensor(DataType::kFloat, {c.batch, c.s, c.nkv * c.head}, seed + 2);
  }
  if (c.past_rows >= 0) {
    d.past_k = RandomTensor(DataType::kFloat, {c.batch, c.nkv, c.past_rows, c.head}, seed + 3);
    d.past_v = RandomTensor(DataType::kFloat, {c.batch, c.nkv, c.past_rows, c.head}, seed + 4);
  }
  if (c.rotary > 0) {
    const int64_t half = c.rotary / 2, rows = 64;
    d.cos = Tensor::Allocate(DataType::kFloat, {rows, half});
    d.sin = Tensor::Allocate(DataType::kFloat, {rows, half});
    for (int64_t p = 0; p < rows; ++p)
      for (int64_t j = 0; j < half; ++j) {
        const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(j) / static_cast<double>(half));
        d.cos.Data<float>()[p * half + j] = static_cast<float>(std::cos(angle));
        d.sin.Data<float>()[p * half + j] = static_cast<float>(std::sin(angle));
      }
  }
  return d;
}

struct Expected {
  Tensor output, present_k, present_v;
};

Expected Reference(const Case& c, const Data& d) {
  const int64_t b_n = c.batch, s_n = c.s, h_n = c.head;
  const int64_t rows = std::max<int64_t>(c.past_rows, c.total);
  const bool first = c.total == c.s;
  const int64_t width = d.query.shape()[2];
  // Element (b, s, head h, feature f) of Q (kind 0), K (1) or V (2) as given.
  const auto at = [&](int kind, int64_t b, int64_t s, int64_t h, int64_t f) -> double {
    if (c.packed) {
      const int64_t first_head = kind == 0 ? 0 : kind == 1 ? c.nq : c.nq + c.nkv;
      return d.query.Data<float>()[(b * s_n + s) * width + (first_head + h) * h_n + f];
    }
    const Tensor& t = kind == 0 ? d.query : kind == 1 ? d.key : d.value;
    const int64_t heads = kind == 0 ? c.nq : c.nkv;
    return t.Data<float>()[(b * s_n + s) * heads * h_n + h * h_n + f];
  };
  // The head vector, rotated at `position` for Q and K when rotary.
  const auto head_vector = [&](int kind, int64_t b, int64_t s, int64_t h, int64_t position) {
    std::vector<double> x(static_cast<size_t>(h_n));
    for (int64_t f = 0; f < h_n; ++f) x[static_cast<size_t>(f)] = at(kind, b, s, h, f);
    if (c.rotary == 0 || kind == 2) return x;
    std::vector<double> y = x;
    const int64_t half = c.rotary / 2;
    for (int64_t j = 0; j < half; ++j) {
      const int64_t i1 = c.interleaved ? 2 * j : j, i2 = c.interleaved ? 2 * j + 1 : j + half;
      const double cj = d.cos.Data<float>()[position * half + j], sj = d.sin.Data<float>()[position * half + j];
      y[static_cast<size_t>(i1)] = cj * x[static_cast<size_t>(i1)] - sj * x[static_cast<size_t>(i2)];
      y[static_cast<size_t>(i2)] = sj * x[static_cast<size_t>(i1)] + cj * x[static_cast<size_t>(i2)];
    }
    return y;
  };
  Expected e;
  e.present_k = Tensor::Allocate(DataType::kFloat, {b_n, c.nkv, rows, h_n});
  e.present_v = Tensor::Allocate(DataType::kFloat, {b_n, c.nkv, rows, h_n});
  std::fill_n(e.present_k.Data<float>(), e.present_k.NumElements(), 0.0f);
  std::fill_n(e.present_v.Data<float>(), e.present_v.NumElements(), 0.0f);
  e.output = Tensor::Allocate(DataType::kFloat, {b_n, s_n, c.nq * h_n});
  for (int64_t b = 0; b < b_n; ++b) {
    const int64_t length = c.seqlens[static_cast<size_t>(b)] + 1;
    const int64_t past = first ? 0 : length - s_n, keys = first ? length : length;
    for (int64_t h = 0; h < c.nkv; ++h) {
      float* pk = e.present_k.Data<float>() + (b * c.nkv + h) * rows * h_n;
      float* pv = e.present_v.Data<float>() + (b * c.nkv + h) * rows * h_n;
      for (int64_t r = 0; r < past; ++r)
        for (int64_t f = 0; f < h_n; ++f) {
          pk[r * h_n + f] = d.past_k.Data<float>()[((b * c.nkv + h) * c.past_rows + r) * h_n + f];
          pv[r * h_n + f] = d.past_v.Data<float>()[((b * c.nkv + h) * c.past_rows + r) * h_n + f];
        }
      for (int64_t s = 0; s < s_n; ++s) {
        const std::vector<double> k = head_vector(1, b, s, h, past + s), v = head_vector(2, b, s, h, past + s);
        for (int64_t f = 0; f < h_n; ++f) {
          pk[(past + s) * h_n + f] = static_cast<float>(k[static_cast<size_t>(f)]);
          pv[(past + s) * h_n + f] = static_cast<float>(v[static_cast<size_t>(f)]);
        }
      }
    }
    for (int64_t h = 0; h < c.nq; ++h) {
      const int64_t hk = h / (c.nq / c.nkv);
      const float* pk = e.present_k.Data<float>() + (b * c.nkv + hk) * rows * h_n;
      const float* pv = e.present_v.Data<float>() + (b * c.nkv + hk) * rows * h_n;
      for (int64_t s = 0; s < s_n; ++s) {
        const int64_t position = past + s;
        const std::vector<double> q = head_vector(0, b, s, h, position);
        std::vector<double> score(static_cast<size_t>(rows), -INFINITY);
        double max = -INFINITY;
        for (int64_t j = 0; j < rows; ++j) {
          if (j > position || j >= keys || (c.window > 0 && j <= position - c.window)) continue;
          double dot = 0;
          for (int64_t f = 0; f < h_n; ++f) dot += q[static_cast<size_t>(f)] * pk[j * h_n + f];
          double x = dot / std::sqrt(static_cast<double>(h_n));
          if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
          score[static_cast<size_t>(j)] = x;
          max = std::max(max, x);
        }
        double sum = 0;
        for (double& x : score) sum += (x = std::exp(x - max));
        for (int64_t f = 0; f < h_n; ++f) {
          double acc = 0;
          for (int64_t j = 0; j < rows; ++j) acc += score[static_cast<size_t>(j)] / sum * pv[j * h_n + f];
          e.output.Data<float>()[(b * s_n + s) * c.nq * h_n + h * h_n + f] = static_cast<float>(acc);
        }
      }
    }
  }
  return e;
}

void Build(const Case& c, const Data& d, OpTester& t) {
  t.Attr("num_heads", c.nq).Attr("kv_num_heads", c.nkv);
  if (c.rotary > 0) t.Attr("do_rotary", int64_t{1}).Attr("rotary_interleaved", int64_t{c.interleaved});
  if (c.window > 0) t.Attr("local_window_size", c.window);
  if (c.softcap > 0) t.Attr("softcap", c.softcap);
  t.Input("query", d.query);
  if (c.packed) t.OmittedInput().OmittedInput(); else t.Input("key", d.key).Input("value", d.value);
  if (c.past_rows >= 0) t.Input("past_key", d.past_k).Input("past_value", d.past_v); else t.OmittedInput().OmittedInput();
  t.Input("seqlens_k", Tensor::FromVector<int32_t>({c.batch}, c.seqlens), true);
  t.Input("total_sequence_length", Tensor::FromVector<int32_t>({}, {c.total}), true);
  if (c.rotary > 0) t.Input("cos_cache", d.cos, true).Input("sin_cache", d.sin, true);
}

void Check(const Case& c, uint32_t seed) {
  const Data d = MakeData(c, seed);
  const Expected e = Reference(c, d);
  OpTester t("GroupQueryAttention", 1, "com.microsoft");
  Build(c, d, t);
  t.Output("output", e.output).Output("present_key", e.present_k).Output("present_value", e.present_v);
  t.Tolerance(1e-5, 1e-4).Run({"cpu"});
}

TEST(GroupQueryAttentionTest, PromptsWithAndWithoutPadding) {
  Case c;
  c.batch = 2, c.s = 5, c.seqlens = {4, 4}, c.total = 5;
  Check(c, 1);
  c.seqlens = {2, 4};  // item 0: 3 tokens, then right padding
  Check(c, 2);
}

TEST(GroupQueryAttentionTest, PackedQkvWithRotary) {
  Case c;
  c.s = 6, c.nq = 4, c.nkv = 1, c.head = 16, c.seqlens = {5}, c.total = 6, c.packed = true, c.rotary = 16;
  Check(c, 3);
}

TEST(GroupQueryAttentionTest, DecodingWithExactAndSharedPasts) {
  Case c;
  c.batch = 2, c.past_rows = 16, c.seqlens = {6, 9}, c.total = 10;  // a 16-row cache, items at different lengths
  Check(c, 4);
  c.batch = 1, c.nq = 6, c.nkv = 3, c.past_rows = 7, c.seqlens = {7}, c.total = 8;  // a past of exactly 7 rows
  Check(c, 5);
  c.batch = 2, c.nq = 4, c.nkv = 4, c.head = 32, c.past_rows = 12, c.seqlens = {3, 8}, c.total = 9, c.rotary = 16,
  c.interleaved = true;  // partial interleaved rotary at each item's own position
  Check(c, 6);
}

// 8+ queries and keys in float32 take the GEMM path of the attention core (attention_core.h).
TEST(GroupQueryAttentionTest, LongerPromptsThroughTheGemmPath) {
  Case c;
  c.batch = 2, c.s = 12, c.nq = 4, c.nkv = 2, c.head = 16, c.seqlens = {11, 8}, c.total = 12, c.rotary = 16,
  c.softcap = 3.0f;  // item 1 padded after 9 tokens
  Check(c, 21);
  c.batch = 1, c.s = 9, c.past_rows = 20, c.seqlens = {15}, c.total = 16, c.rotary = 0, c.softcap = 0.0f,
  c.window = 5;  // 9 new tokens after 7 cached, a window
  Check(c, 22);
}

TEST(GroupQueryAttentionTest, LaterPromptAfterACachedOne) {
  Case c;
  c.s = 3, c.past_rows = 10, c.seqlens = {6}, c.total = 7;
  Check(c, 7);
}

TEST(GroupQueryAttentionTest, LocalWindowAndSoftcap) {
  Case c;
  c.s = 7, c.nq = 2, c.nkv = 1, c.seqlens = {6}, c.total = 7, c.window = 3, c.softcap = 2.0f;
  Check(c, 8);
  c.s = 1, c.nkv = 2, c.past_rows = 12, c.seqlens = {9}, c.total = 10, c.window = 4, c.softcap = 0.0f;
  Check(c, 9);
}

// present bound over past (IoBinding, one buffer per cache): only the new rows change, the rest of the cache stays.
TEST(GroupQueryAttentionTest, PresentBoundOverPastIsUpdatedInPlace) {
  Case c;
  c.batch = 2, c.past_rows = 16, c.seqlens = {6, 9}, c.total = 10;
  const Data d = MakeData(c, 11);
  const Expected e = Reference(c, d);
  OpTester t("GroupQueryAttention", 1, "com.microsoft");
  Build(c, d, t);
  t.OutputName("output").OutputName("present_key").OutputName("present_value");
  SessionOptions options;
  options.AddProvider("CPUExecutionProvider");
  Session session(TestEnv(), t.SerializedModel().data(), t.SerializedModel().size(), options);
  Tensor cache_k = Tensor::Allocate(DataType::kFloat, d.past_k.shape());
  Tensor cache_v = Tensor::Allocate(DataType::kFloat, d.past_v.shape());
  std::copy_n(d.past_k.Data<float>(), d.past_k.NumElements(), cache_k.Data<float>());
  std::copy_n(d.past_v.Data<float>(), d.past_v.NumElements(), cache_v.Data<float>());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("query", Value(d.query));
  binding.BindInput("key", Value(d.key));
  binding.BindInput("value", Value(d.value));
  binding.BindInput("past_key", Value(cache_k));
  binding.BindInput("past_value", Value(cache_v));
  binding.BindOutput("output", MemoryInfo::Host());
  binding.BindOutput("present_key", Value(cache_k));
  binding.BindOutput("present_value", Value(cache_v));
  session.Run(binding);
  EXPECT_EQ(CompareTensors(e.output, binding.BoundOutputs()[0].tensor(), 1e-5, 1e-4), "");
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.nkv; ++h)
      for (int64_t r = 0; r < c.past_rows; ++r)
        for (int64_t f = 0; f < c.head; ++f) {
          const int64_t at = ((b * c.nkv + h) * c.past_rows + r) * c.head + f;
          const bool new_row = r == c.seqlens[static_cast<size_t>(b)];
          EXPECT_EQ(cache_k.Data<float>()[at], new_row ? e.present_k.Data<float>()[at] : d.past_k.Data<float>()[at])
              << b << " " << h << " " << r << " " << f;
          EXPECT_EQ(cache_v.Data<float>()[at], new_row ? e.present_v.Data<float>()[at] : d.past_v.Data<float>()[at]);
        }
}

TEST(GroupQueryAttentionTest, ErrorsNameWhatDoesNotFit) {
  Case c;
  c.past_rows = 4, c.seqlens = {12}, c.total = 10;  // 13 tokens, longer than total_sequence_length
  const Data d = MakeData(c, 12);
  OpTester too_long("GroupQueryAttention", 1, "com.microsoft");
  Build(c, d, too_long);
  too_long.OutputName("output").ExpectFailure("seqlens_k[0] = 12").Run({"cpu"});

  Case p;
  p.s = 2, p.seqlens = {1}, p.total = 2;
  const Data pd = MakeData(p, 13);
  OpTester with_positions("GroupQueryAttention", 1, "com.microsoft");
  Build(p, pd, with_positions);
  with_positions.OmittedInput().OmittedInput().Input("position_ids", Tensor::FromVector<int64_t>({1, 2}, {0, 1}));
  with_positions.OutputName("output").ExpectFailure("position_ids").Run({"cpu"});

  Case q = p;
  q.nkv = 3;  // 4 query heads over 3 key/value heads
  OpTester bad_heads("GroupQueryAttention", 1, "com.microsoft");
  Build(q, MakeData(q, 14), bad_heads);
  bad_heads.OutputName("output").ExpectFailure("kv_num_heads").Run({"cpu"});
}

}  // namespace
}  // namespace tessera::test
