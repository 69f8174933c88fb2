// The CUDA kernels of the opset-23 transformer ops against the CPU EP: ai.onnx Attention (multi-head and
// grouped-query heads, 3-D and 4-D operands, bool / additive / short masks, causal masking after a past, present
// outputs) and RotaryEmbedding (ai.onnx and com.microsoft: position forms, interleaved pairs, partial rotation), in
// float32 and float16, and com.microsoft GroupQueryAttention (prompts with padding, packed QKV, rotary, decoding with a
// shared cache, later prompts, windows; the cache updated in place) and MultiHeadAttention in the forms that do not become
// ai.tessera::Attention (past, unidirectional, packed, key padding lengths, keys in heads). Each case also checks that the node really runs on the CUDA EP; the forms the CUDA kernel
// leaves to the CPU (softcap, qk_matmul_output) are checked to fall back and still agree.
#include <cmath>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaTransformerOpsTest = CudaTest;

// How many of the model's nodes (copies aside) the CUDA EP takes.
size_t NodesOnCuda(const std::string& model) {
  SessionOptions options;
  options.AddProvider(kCudaEpName);
  Session session = MakeSession(model, options, TestEnv());
  size_t count = 0;
  for (const PartitionEntry& e : session.Partition()) count += !e.is_copy && e.ep == kCudaEpName;
  return count;
}

Tensor ToHalf(const Tensor& t) {
  Tensor out = Tensor::Allocate(kF16, t.shape());
  for (int64_t i = 0; i < t.NumElements(); ++i) out.Data<Float16>()[i] = ToFloat16(t.Data<float>()[i]);
  return out;
}

struct AttentionCase {
  int64_t batch = 1, hq = 2, hkv = 2, s = 3, l = 3, past = 0, d = 8, dv = 8;
  bool three_d = false, causal = false, present = false;
  int mask = 0;  // 0: none; 1: bool [S, T]; 2: float [B, 1, S, T - 1] (the last key padded); 3: float [B, Hq, S, T]
};

std::vector<Tensor> AttentionInputs(const AttentionCase& c, DataType type, uint32_t seed) {
  const int64_t total = c.past + c.l;
  std::vector<Tensor> in;
  in.push_back(RandomTensor(type, c.three_d ? Shape{c.batch, c.s, c.hq * c.d} : Shape{c.batch, c.hq, c.s, c.d}, seed));
  in.push_back(RandomTensor(type, c.three_d ? Shape{c.batch, c.l, c.hkv * c.d} : Shape{c.batch, c.hkv, c.l, c.d}, seed + 1));
  in.push_back(RandomTensor(type, c.three_d ? Shape{c.batch, c.l, c.hkv * c.dv} : Shape{c.batch, c.hkv, c.l, c.dv}, seed + 2));
  if (c.mask == 1) {
    std::vector<bool> keep(static_cast<size_t>(c.s * total), true);
    for (size_t i = 1; i < keep.size(); i += 4) keep[i] = false;  // never a whole row
    in.push_back(Tensor::FromVector<bool>({c.s, total}, keep));
  } else if (c.mask == 2) {
    in.push_back(RandomTensor(type, {c.batch, 1, c.s, total - 1}, seed + 3));
  } else if (c.mask == 3) {
    in.push_back(RandomTensor(type, {c.batch, c.hq, c.s, total}, seed + 3));
  }
  if (c.past > 0) {
    in.push_back(RandomTensor(type, {c.batch, c.hkv, c.past, c.d}, seed + 4));
    in.push_back(RandomTensor(type, {c.batch, c.hkv, c.past, c.dv}, seed + 5));
  }
  return in;
}

void BuildAttention(const AttentionCase& c, OpTester& t, const std::vector<Tensor>& in) {
  if (c.three_d) t.Attr("q_num_heads", c.hq).Attr("kv_num_heads", c.hkv);
  if (c.causal) t.Attr("is_causal", int64_t{1});
  t.Input("Q", in[0]).Input("K", in[1]).Input("V", in[2]);
  size_t next = 3;
  if (c.mask != 0) t.Input("attn_mask", in[next++]); else t.OmittedInput();
  if (c.past > 0) t.Input("past_key", in[next]).Input("past_value", in[next + 1]);
}

TEST_F(CudaTransformerOpsTest, OnnxAttention) {
  std::vector<AttentionCase> cases(7);
  cases[1].three_d = true, cases[1].hq = 4, cases[1].batch = 2, cases[1].l = 5, cases[1].dv = 16, cases[1].mask = 1;
  cases[2].past = 4, cases[2].l = 2, cases[2].s = 2, cases[2].causal = true, cases[2].mask = 2, cases[2].present = true;
  cases[3].hq = 8, cases[3].hkv = 2, cases[3].s = 1, cases[3].l = 1, cases[3].past = 9, cases[3].d = cases[3].dv = 64,
  cases[3].present = true;                                                                // a decoding step, GQA
  cases[4].hq = 6, cases[4].hkv = 3, cases[4].s = 37, cases[4].l = 37, cases[4].causal = true, cases[4].d = 32,
  cases[4].dv = 32;                                                                      // a prompt, GQA, causal
  cases[5].mask = 3, cases[5].hq = 4, cases[5].hkv = 2, cases[5].s = 5, cases[5].l = 7;  // per-head mask, GQA
  cases[6].three_d = true, cases[6].past = 3, cases[6].present = true, cases[6].hq = 4, cases[6].hkv = 1;  // MQA
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const AttentionCase& c = cases[i];
    OpTester t("Attention", 23);
    BuildAttention(c, t, AttentionInputs(c, kF32, 10 * static_cast<uint32_t>(i) + 1));
    t.OutputName("Y");
    if (c.present) t.OutputName("present_key").OutputName("present_value");
    t.Tolerance(1e-4, 1e-4);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        "Attention", 23, AttentionInputs(c, kF16, 10 * static_cast<uint32_t>(i) + 5),
        [&](OpTester& o, const std::vector<Tensor>& in) { BuildAttention(c, o, in); }, 4e-3, 1e-2);
  }
}

// softcap and the qk_matmul_output output are the CPU EP's: the node falls back and agrees.
TEST_F(CudaTransformerOpsTest, OnnxAttentionFormsLeftToTheCpu) {
  for (bool softcap : {true, false}) {
    AttentionCase c;
    OpTester t("Attention", 23);
    BuildAttention(c, t, AttentionInputs(c, kF32, 3));
    if (softcap) t.Attr("softcap", 2.0f);
    t.OutputName("Y");
    if (!softcap) t.OutputName("present_key").OutputName("present_value").OutputName("qk");
    t.Tolerance(1e-5, 1e-5);
    EXPECT_EQ(NodesOnCuda(t.SerializedModel()), 0u);
    t.CompareWithCpu({"cuda"});
  }
}

// Caches [rows, half] of cos/sin(row / 10000^(2j / rot)).
std::pair<Tensor, Tensor> RotaryCaches(DataType type, int64_t rows, int64_t half) {
  Tensor c = Tensor::Allocate(DataType::kFloat, {rows, half}), s = Tensor::Allocate(DataType::kFloat, {rows, half});
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(j) / static_cast<double>(half));
      c.Data<float>()[p * half + j] = static_cast<float>(std::cos(angle));
      s.Data<float>()[p * half + j] = static_cast<float>(std::sin(angle));
    }
  if (type == kF16) return {ToHalf(c), ToHalf(s)};
  return {c, s};
}

TEST_F(CudaTransformerOpsTest, RotaryEmbedding) {
  struct Case {
    bool contrib, four_d, interleaved;
    int64_t rot;        // 0: the whole head
    int positions;      // 0: none (caches [B, S, half]); 1: [B, S]; 2: com.microsoft's one first position
  };
  const int64_t batch = 2, heads = 3, seq = 5, head = 16, rows = 32;
  for (const Case& c : std::vector<Case>{{false, true, false, 0, 1},
                                         {false, false, true, 8, 1},
                                         {false, false, false, 0, 0},
                                         {false, true, true, 12, 0},
                                         {true, false, false, 0, 1},
                                         {true, false, true, 8, 2},
                                         {true, true, false, 0, 2}}) {
    SCOPED_TRACE(std::string(c.contrib ? "com.microsoft" : "ai.onnx") + (c.four_d ? " 4-D" : " 3-D") +
                 (c.interleaved ? " interleaved" : "") + " rot " + std::to_string(c.rot) + " positions " +
                 std::to_string(c.positions));
    const int64_t half = (c.rot > 0 ? c.rot : head) / 2;
    const Shape x_shape = c.four_d ? Shape{batch, heads, seq, head} : Shape{batch, seq, heads * head};
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < batch * seq; ++i) ids.push_back((7 * i + 3) % rows);
    const Tensor positions = c.positions == 2 ? Tensor::FromVector<int64_t>({1}, {11})
                                              : Tensor::FromVector<int64_t>({batch, seq}, ids);
    const auto build = [&](OpTester& t, const std::vector<Tensor>& in) {
      t.Attr("interleaved", int64_t{c.interleaved});
      if (c.rot > 0) t.Attr("rotary_embedding_dim", c.rot);
      if (!c.four_d) t.Attr("num_heads", heads);
      t.Input("X", in[0]);
      if (c.contrib) {
        t.Input("position_ids", positions).Input("cos_cache", in[1]).Input("sin_cache", in[2]);
      } else {
        t.Input("cos_cache", in[1]).Input("sin_cache", in[2]);
        if (c.positions == 1) t.Input("position_ids", positions);
      }
    };
    const auto inputs = [&](DataType type, uint32_t seed) {
      auto [cos, sin] = RotaryCaches(type, c.positions == 0 ? batch * seq : rows, half);
      if (c.positions == 0) {  // [B, S, half]: the rows of the table in order
        cos = cos.Reshaped({batch, seq, half});
        sin = sin.Reshaped({batch, seq, half});
      }
      return std::vector<Tensor>{RandomTensor(type, x_shape, seed, -2, 2), cos, sin};
    };
    OpTester t("RotaryEmbedding", c.contrib ? 1 : 23, c.contrib ? "com.microsoft" : "");
    build(t, inputs(kF32, 1));
    t.OutputName("Y").Tolerance(1e-5, 1e-5);
    CompareOnCuda(t);
    CompareFloat16WithCpu("RotaryEmbedding", c.contrib ? 1 : 23, inputs(kF16, 2), build, 4e-3, 4e-3,
                          c.contrib ? "com.microsoft" : "");
  }
}

struct GqaCase {
  int64_t batch = 1, s = 1, nq = 4, nkv = 2, head = 32, past_rows = -1;
  std::vector<int32_t> seqlens;
  int32_t total = 0;
  bool packed = false, interleaved = false;
  int64_t rotary = 0, window = -1;
};

// Inputs: query, [key, value,] [past_key, past_value,] [cos, sin] in `type`.
std::vector<Tensor> GqaInputs(const GqaCase& c, DataType type, uint32_t seed) {
  std::vector<Tensor> in;
  const int64_t width = c.packed ? (c.nq + 2 * c.nkv) * c.head : c.nq * c.head;
  in.push_back(RandomTensor(type, {c.batch, c.s, width}, seed));
  if (!c.packed) {
    in.push_back(RandomTensor(type, {c.batch, c.s, c.nkv * c.head}, seed + 1));
    in.push_back(RandomTensor(type, {c.batch, c.s, c.nkv * c.head}, seed + 2));
  }
  if (c.past_rows >= 0) {
    in.push_back(RandomTensor(type, {c.batch, c.nkv, c.past_rows, c.head}, seed + 3));
    in.push_back(RandomTensor(type, {c.batch, c.nkv, c.past_rows, c.head}, seed + 4));
  }
  if (c.rotary > 0) {
    auto [cos, sin] = RotaryCaches(type, 64, c.rotary / 2);
    in.push_back(cos);
    in.push_back(sin);
  }
  return in;
}

void BuildGqa(const GqaCase& c, OpTester& t, const std::vector<Tensor>& in) {
  t.Attr("num_heads", c.nq).Attr("kv_num_heads", c.nkv);
  if (c.rotary > 0) t.Attr("do_rotary", int64_t{1}).Attr("rotary_interleaved", int64_t{c.interleaved});
  if (c.window > 0) t.Attr("local_window_size", c.window);
  size_t next = 0;
  t.Input("query", in[next++]);
  if (c.packed) {
    t.OmittedInput().OmittedInput();
  } else {
    t.Input("key", in[next]).Input("value", in[next + 1]);
    next += 2;
  }
  if (c.past_rows >= 0) {
    t.Input("past_key", in[next]).Input("past_value", in[next + 1]);
    next += 2;
  } else {
    t.OmittedInput().OmittedInput();
  }
  t.Input("seqlens_k", Tensor::FromVector<int32_t>({c.batch}, c.seqlens), true);
  t.Input("total_sequence_length", Tensor::FromVector<int32_t>({}, {c.total}), true);
  if (c.rotary > 0) t.Input("cos_cache", in[next], true).Input("sin_cache", in[next + 1], true);
}

TEST_F(CudaTransformerOpsTest, GroupQueryAttention) {
  std::vector<GqaCase> cases(6);
  cases[0].batch = 2, cases[0].s = 5, cases[0].seqlens = {2, 4}, cases[0].total = 5;  // a padded prompt
  cases[1].s = 6, cases[1].nkv = 1, cases[1].seqlens = {5}, cases[1].total = 6, cases[1].packed = true,
  cases[1].rotary = 32;                                                                // packed, rotary
  cases[2].batch = 2, cases[2].past_rows = 16, cases[2].seqlens = {6, 9}, cases[2].total = 10, cases[2].rotary = 16,
  cases[2].interleaved = true;                                                         // decoding, shared cache
  cases[3].s = 3, cases[3].past_rows = 10, cases[3].seqlens = {6}, cases[3].total = 7;  // a later prompt
  cases[4].s = 7, cases[4].nq = 2, cases[4].nkv = 1, cases[4].seqlens = {6}, cases[4].total = 7, cases[4].window = 3;
  cases[5].nq = 8, cases[5].head = 64, cases[5].past_rows = 7, cases[5].seqlens = {7}, cases[5].total = 8;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const GqaCase& c = cases[i];
    OpTester t("GroupQueryAttention", 1, "com.microsoft");
    BuildGqa(c, t, GqaInputs(c, kF32, 100 + 10 * static_cast<uint32_t>(i)));
    t.OutputName("output").OutputName("present_key").OutputName("present_value").Tolerance(1e-4, 1e-4);
    CompareOnCuda(t);
    CompareFloat16WithCpu(
        "GroupQueryAttention", 1, GqaInputs(c, kF16, 105 + 10 * static_cast<uint32_t>(i)),
        [&](OpTester& o, const std::vector<Tensor>& in) { BuildGqa(c, o, in); }, 4e-3, 1e-2, "com.microsoft");
  }
}

// present bound over past on the device (one buffer per cache): the new rows change, the rest stays.
TEST_F(CudaTransformerOpsTest, GroupQueryAttentionCacheInPlace) {
  GqaCase c;
  c.batch = 2, c.past_rows = 16, c.seqlens = {6, 9}, c.total = 10, c.rotary = 32;
  const std::vector<Tensor> in = GqaInputs(c, kF32, 7);
  OpTester t("GroupQueryAttention", 1, "com.microsoft");
  BuildGqa(c, t, in);
  t.OutputName("output").OutputName("present_key").OutputName("present_value");
  const std::vector<Tensor> expected = t.RunOn("cpu");
  SessionOptions options;
  options.AddProvider(kCudaEpName);
  const std::string model = t.SerializedModel();
  Session session(TestEnv(), model.data(), model.size(), options);
  Tensor cache_k = ToCuda(in[3]), cache_v = ToCuda(in[4]);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("query", Value(ToCuda(in[0])));
  binding.BindInput("key", Value(ToCuda(in[1])));
  binding.BindInput("value", Value(ToCuda(in[2])));
  binding.BindInput("past_key", Value(cache_k));
  binding.BindInput("past_value", Value(cache_v));
  binding.BindOutput("output", MemoryInfo::Host());
  binding.BindOutput("present_key", Value(cache_k));
  binding.BindOutput("present_value", Value(cache_v));
  session.Run(binding);
  EXPECT_EQ(CompareTensors(expected[0], binding.BoundOutputs()[0].tensor(), 1e-4, 1e-4), "");
  const Tensor k = ToHost(cache_k), v = ToHost(cache_v);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t r = 0; r < c.past_rows; ++r) {
      const bool new_row = r == c.seqlens[static_cast<size_t>(b)];
      for (int64_t h = 0; h < c.nkv; ++h)
        for (int64_t f = 0; f < c.head; ++f) {
          const int64_t at = ((b * c.nkv + h) * c.past_rows + r) * c.head + f;
          EXPECT_NEAR(k.Data<float>()[at], (new_row ? expected[1] : in[3]).Data<float>()[at], 1e-5) << b << " " << r;
          EXPECT_NEAR(v.Data<float>()[at], (new_row ? expected[2] : in[4]).Data<float>()[at], 1e-5) << b << " " << r;
        }
    }
}

struct MhaCase {
  int64_t batch = 2, s = 3, l = 3, heads = 2, head = 16, v_head = 16, past = 0;
  int form = 0;     // 0: Q, K, V [B, S|L, D]; 1: packed QKV; 2: packed KV; 3: K, V in heads [B, N, L, H]
  bool bias = false, unidirectional = false, present = false;
  int padding = 0;  // 0: none; 1: lengths [B]; 2: [B, T]; 3: [B, S, T]
  int attention_bias = 0;  // 0: none; 1: [1, N, S, T]; 2: [B, 1, S, T]
};

// Inputs in `type` (masks int32), in input order, with the names BuildMha gives them.
std::vector<std::pair<std::string, Tensor>> MhaInputs(const MhaCase& c, DataType type, uint32_t seed) {
  std::vector<std::pair<std::string, Tensor>> in;
  const int64_t d = c.heads * c.head, dv = c.heads * c.v_head, total = c.past + c.l;
  if (c.form == 1) {
    in.push_back({"query", RandomTensor(type, {c.batch, c.s, c.heads, 3, c.head}, seed)});
    in.push_back({"", Tensor()});
    in.push_back({"", Tensor()});
  } else {
    in.push_back({"query", RandomTensor(type, {c.batch, c.s, d}, seed)});
    if (c.form == 2) {
      in.push_back({"key", RandomTensor(type, {c.batch, c.l, c.heads, 2, c.head}, seed + 1)});
      in.push_back({"", Tensor()});
    } else if (c.form == 3) {
      in.push_back({"key", RandomTensor(type, {c.batch, c.heads, c.l, c.head}, seed + 1)});
      in.push_back({"value", RandomTensor(type, {c.batch, c.heads, c.l, c.v_head}, seed + 2)});
    } else {
      in.push_back({"key", RandomTensor(type, {c.batch, c.l, d}, seed + 1)});
      in.push_back({"value", RandomTensor(type, {c.batch, c.l, dv}, seed + 2)});
    }
  }
  in.push_back({c.bias ? "bias" : "", c.bias ? RandomTensor(type, {2 * d + dv}, seed + 3) : Tensor()});
  Tensor mask;
  if (c.padding == 1) mask = Tensor::FromVector<int32_t>({c.batch}, std::vector<int32_t>{static_cast<int32_t>(total - 1), static_cast<int32_t>(total)});
  if (c.padding == 2 || c.padding == 3) {
    const Shape shape = c.padding == 2 ? Shape{c.batch, total} : Shape{c.batch, c.s, total};
    mask = Tensor::Allocate(DataType::kInt32, shape);
    for (int64_t i = 0; i < mask.NumElements(); ++i) mask.Data<int32_t>()[i] = i % total == 0 || i % 3 != 1;
  }
  in.push_back({c.padding ? "key_padding_mask" : "", mask});
  Tensor added;
  if (c.attention_bias == 1) added = RandomTensor(type, {1, c.heads, c.s, total}, seed + 4);
  if (c.attention_bias == 2) added = RandomTensor(type, {c.batch, 1, c.s, total}, seed + 4);
  in.push_back({c.attention_bias ? "attention_bias" : "", added});
  if (c.past > 0) {
    in.push_back({"past_key", RandomTensor(type, {c.batch, c.heads, c.past, c.head}, seed + 5)});
    in.push_back({"past_value", RandomTensor(type, {c.batch, c.heads, c.past, c.v_head}, seed + 6)});
  }
  return in;
}

void BuildMha(const MhaCase& c, OpTester& t, const std::vector<std::pair<std::string, Tensor>>& in) {
  t.Attr("num_heads", c.heads);
  if (c.unidirectional) t.Attr("unidirectional", int64_t{1});
  for (const auto& [name, value] : in)
    if (name.empty()) t.OmittedInput(); else t.Input(name, value);
}

TEST_F(CudaTransformerOpsTest, MultiHeadAttentionWithPastMasksAndPackedForms) {
  std::vector<MhaCase> cases(6);
  cases[0].s = 1, cases[0].l = 1, cases[0].past = 7, cases[0].bias = true, cases[0].unidirectional = true,
  cases[0].present = true;  // a decoder step with past and present
  cases[1].form = 1, cases[1].bias = true, cases[1].padding = 1, cases[1].s = cases[1].l = 5;  // packed QKV, lengths
  cases[2].form = 2, cases[2].padding = 2, cases[2].l = 6;                                     // packed KV, [B, T]
  cases[3].form = 3, cases[3].attention_bias = 1, cases[3].l = 9, cases[3].v_head = 8;          // cross attention
  cases[4].padding = 3, cases[4].attention_bias = 2, cases[4].past = 4, cases[4].present = true, cases[4].bias = true;
  cases[5].s = cases[5].l = 4, cases[5].unidirectional = true, cases[5].heads = 4, cases[5].head = 64,
  cases[5].v_head = 64;  // a causal prompt
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const MhaCase& c = cases[i];
    OpTester t("MultiHeadAttention", 1, "com.microsoft");
    BuildMha(c, t, MhaInputs(c, kF32, 200 + 10 * static_cast<uint32_t>(i)));
    t.OutputName("Y");
    if (c.present) t.OutputName("present_key").OutputName("present_value");
    t.Tolerance(1e-4, 1e-4);
    CompareOnCuda(t);
    std::vector<Tensor> half;
    std::vector<std::string> names;
    for (const auto& [name, value] : MhaInputs(c, kF16, 205 + 10 * static_cast<uint32_t>(i))) {
      names.push_back(name);
      half.push_back(value);
    }
    CompareFloat16WithCpu(
        "MultiHeadAttention", 1, half,
        [&](OpTester& o, const std::vector<Tensor>& values) {
          std::vector<std::pair<std::string, Tensor>> named;
          for (size_t k = 0; k < values.size(); ++k) named.push_back({names[k], values[k]});
          BuildMha(c, o, named);
        },
        4e-3, 1e-2, "com.microsoft");
  }
}

}  // namespace
}  // namespace tessera::test
