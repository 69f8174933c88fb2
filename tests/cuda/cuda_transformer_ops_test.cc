// The CUDA kernels of the opset-23 transformer ops against the CPU EP: ai.onnx Attention (multi-head and
// grouped-query heads, 3-D and 4-D operands, bool / additive / short masks, causal masking after a past, present
// outputs) and RotaryEmbedding (ai.onnx and com.microsoft: position forms, interleaved pairs, partial rotation), in
// float32 and float16. Each case also checks that the node really runs on the CUDA EP; the forms the CUDA kernel
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

}  // namespace
}  // namespace tessera::test
