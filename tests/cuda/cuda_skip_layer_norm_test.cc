// SkipLayerNormalization on the CUDA EP against the CPU EP (float32 and float16, strict and default
// `enable_skip_layer_norm_strict_mode`, with and without beta and bias, parameters fed or constant, broadcast skip, the
// sum output; the
// word-per-thread kernel's row counts and widths and the block kernel's), and
// the fused residual Add + LayerNormalization in strict mode against the unfused graph on the GPU, bit for bit;
// ai.tessera::MatMulSkipLayerNormalization (the product's depth in chunks whose float32 partial sums the
// normalization adds up, or one product) against the CPU EP's kernel, and its fusion in a BERT output block.
#include "cuda/cuda_test_util.h"
#include "ops/skip_layer_norm_model.h"
#include "unit/graph/passes/pass_test_graph.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaSkipLayerNormTest = CudaTest;

ProviderOptions StrictMode(bool strict) { return {{"enable_skip_layer_norm_strict_mode", strict ? "1" : "0"}}; }

std::vector<Tensor> RunOnCpu(const std::string& model, const Session::NamedValues& feeds) {
  Session session(TestEnv(), model.data(), model.size(), OptionsFor("cpu"));
  std::vector<Tensor> outputs;
  for (const Value& v : session.Run(feeds)) outputs.push_back(v.tensor());
  return outputs;
}

void ExpectCudaMatchesCpu(const SkipLayerNormCase& c) {
  const std::string model = SkipLayerNormModel(c);
  const Session::NamedValues feeds = RandomFeeds(c, 21);
  const std::vector<Tensor> want = RunOnCpu(model, feeds);
  const bool half = c.type == DataType::kFloat16;
  for (bool strict : {true, false}) {
    ExpectAllOnCuda(model, StrictMode(strict));
    const std::vector<Tensor> got = RunOnCuda(model, feeds, StrictMode(strict));
    ASSERT_EQ(got.size(), want.size());
    // float16: the CPU rounds like strict mode and accumulates in double; default mode keeps the sum in float.
    const double tolerance = !half ? 1e-5 : strict ? 2e-3 : 1e-2;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(CompareTensors(want[i], got[i], tolerance, tolerance), "")
          << c.domain << " " << DataTypeName(c.type) << " " << c.input.ToString() << " + " << c.skip.ToString()
          << (c.beta ? " beta" : "") << (c.bias ? " bias" : "") << (c.constant_parameters ? " constant" : "")
          << (strict ? " strict" : " default") << ", output "
          << i;
  }
}

TEST_F(CudaSkipLayerNormTest, MatchesCpu) {
  struct Shapes {
    Shape input, skip;
  };
  const std::vector<Shapes> shapes = {
      {{2, 5, 768}, {2, 5, 768}},  // BERT-base rows, cached in shared memory
      {{3, 7, 33}, {7, 33}},       // broadcast skip, odd width
      {{2, 3, 1}, {2, 1, 40}},     // input broadcast along the hidden axis
      {{2, 10000}, {2, 10000}},    // longer than the shared-memory cache
      // default mode, rows of at most 1024 16-byte words: one thread per word
      {{1, 1, 768}, {1, 1, 768}},  // a decoding step's token: 96 (float16) or 192 (float32) threads
      {{3, 1024}, {3, 1024}},      // whole warps per row
      {{16, 64}, {16, 64}},        // rows shorter than a warp: 4 rows per block
      {{1, 1, 768}, {1, 768}},     // one row, the skip broadcast (a token's embedding plus its position's)
      {{2, 64, 768}, {2, 64, 768}},  // BERT-base's 128 rows: a block per row
      {{1100, 36}, {1100, 36}},    // float32: 9 words, a partly idle warp per row, the last block partly filled
      {{5, 1028}, {5, 1028}},      // float16: not whole words, the block kernel in default mode too
      {{2, 8192}, {2, 8192}},      // float16: the longest row (1024 words); float32: the block kernel
      {{3, 40, 200}, {3, 40, 200}},  // 25 (float16) or 50 (float32) words: 4 or 2 rows per block
  };
  for (DataType type : {DataType::kFloat, DataType::kFloat16})
    for (const Shapes& s : shapes)
      for (bool beta : {true, false})
        for (bool bias : {true, false}) {
          SkipLayerNormCase c;
          c.type = type;
          c.input = s.input;
          c.skip = s.skip;
          c.beta = beta;
          c.bias = bias;
          c.sum = bias;
          ExpectCudaMatchesCpu(c);
          // Initializer parameters: the word kernel loads them before waiting for the kernel before it.
          c.constant_parameters = true;
          ExpectCudaMatchesCpu(c);
        }
}

TEST_F(CudaSkipLayerNormTest, MicrosoftDomain) {
  SkipLayerNormCase c;
  c.domain = "com.microsoft";
  c.type = DataType::kFloat16;
  c.input = c.skip = Shape{4, 128, 64};
  c.bias = c.sum = true;
  c.epsilon = 1e-12f;
  ExpectCudaMatchesCpu(c);
}

// x + r -> LayerNormalization in float16, with the sum read again (pre-LN residual stream).
std::string ResidualLayerNormFloat16() {
  constexpr int kHalf = static_cast<int>(DataType::kFloat16);
  GraphBuilder builder;
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromString(builder.Input("x", {4, 16, 256}, kHalf)
                                        .Input("r", {4, 16, 256}, kHalf)
                                        .Node("Add", {"x", "r"}, {"sum"})
                                        .Node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"})
                                        .Node("Add", {"sum", "y"}, {"z"})
                                        .Output("z", kHalf)
                                        .Serialize()));
  for (const auto& [name, seed, lo] : {std::tuple{"gamma", 3u, 0.5}, std::tuple{"beta", 4u, -1.0}}) {
    const Tensor t = RandomTensor(DataType::kFloat16, {256}, seed, lo, lo + 1.0);
    onnx::TensorProto* init = proto.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(kHalf);
    init->add_dims(256);
    init->set_raw_data(t.raw_data(), t.SizeInBytes());
  }
  return proto.SerializeAsString();
}

TEST_F(CudaSkipLayerNormTest, StrictModeMatchesTheUnfusedGraphExactly) {
  const std::string model = ResidualLayerNormFloat16();
  const Session::NamedValues feeds = {{"x", Value(RandomTensor(DataType::kFloat16, {4, 16, 256}, 5, -3, 3))},
                                      {"r", Value(RandomTensor(DataType::kFloat16, {4, 16, 256}, 6, -3, 3))}};
  auto run = [&](OptimizationLevel level, bool strict, std::vector<std::string>* ops) {
    SessionOptions options;
    options.optimization_level = level;
    options.AddProvider(kCudaEpName, StrictMode(strict));
    Session session = MakeSession(model, options, TestEnv());
    for (const PartitionEntry& e : session.Partition())
      if (!e.is_copy) {
        ops->push_back(e.op_type);
        EXPECT_EQ(e.ep, kCudaEpName) << e.op_type;
      }
    return session.Run(feeds)[0].tensor();
  };
  std::vector<std::string> unfused_ops, strict_ops, default_ops;
  const Tensor unfused = run(OptimizationLevel::kBasic, true, &unfused_ops);
  const Tensor strict = run(OptimizationLevel::kAll, true, &strict_ops);
  const Tensor relaxed = run(OptimizationLevel::kAll, false, &default_ops);
  EXPECT_EQ(unfused_ops, (std::vector<std::string>{"Add", "LayerNormalization", "Add"}));
  EXPECT_EQ(strict_ops, (std::vector<std::string>{"SkipLayerNormalization", "Add"}));
  EXPECT_EQ(CompareTensors(unfused, strict, 0, 0), "");
  EXPECT_EQ(CompareTensors(unfused, relaxed, 1e-2, 1e-2), "");
}

struct MatMulSkipCase {
  Shape a, b, skip;
  bool beta = true, bias = true;
};

// One fused node; B, gamma, beta and bias initializers.
void BuildMatMulSkip(OpTester& t, const MatMulSkipCase& c, const std::vector<Tensor>& in) {
  t.Attr("epsilon", 1e-5f);
  t.Input("A", in[0]).Input("B", in[1], true).Input("skip", in[2]).Input("gamma", in[3], true);
  if (c.beta) t.Input("beta", in[4], true);
  else if (c.bias) t.OmittedInput();
  if (c.bias) t.Input("bias", in[5], true);
}

std::vector<MatMulSkipCase> MatMulSkipCases() {
  return {
      {{1, 128, 3072}, {3072, 768}, {1, 128, 768}},  // BERT-base's FFN output: 4 depth chunks
      {{1, 128, 768}, {768, 768}, {1, 128, 768}},    // its attention output: 4 chunks of 192
      {{4, 384}, {384, 256}, {4, 256}},              // 2 chunks
      {{2, 3, 64}, {64, 32}, {2, 3, 32}},            // too shallow to split: one product
      {{1, 128, 3072}, {3072, 768}, {128, 768}},     // a skip that broadcasts: one product
      {{1, 128, 3072}, {3072, 768}, {1, 128, 768}, false, false},
      {{1, 128, 3072}, {3072, 768}, {1, 128, 768}, false, true},
      {{8, 768}, {768, 100}, {8, 100}},              // 4 chunks in float32; float16 rows of 100 are not whole words
      {{3000}, {3000, 40}, {40}},                    // a 1-D A: one row
  };
}

std::vector<Tensor> MatMulSkipInputs(DataType type, const MatMulSkipCase& c, uint32_t seed) {
  const int64_t n = c.b[1];
  return {RandomTensor(type, c.a, seed),           RandomTensor(type, c.b, seed + 1, -0.05, 0.05),
          RandomTensor(type, c.skip, seed + 2),     RandomTensor(type, {n}, seed + 3, 0.5, 1.5),
          RandomTensor(type, {n}, seed + 4),        RandomTensor(type, {n}, seed + 5)};
}

TEST_F(CudaSkipLayerNormTest, MatMulSkipLayerNormMatchesCpu) {
  for (const MatMulSkipCase& c : MatMulSkipCases()) {
    const std::string what = c.a.ToString() + " x " + c.b.ToString() + " + " + c.skip.ToString() +
                             (c.beta ? " beta" : "") + (c.bias ? " bias" : "");
    const std::vector<Tensor> in = MatMulSkipInputs(kF32, c, 31);
    OpTester t("MatMulSkipLayerNormalization", 1, "ai.tessera");
    BuildMatMulSkip(t, c, in);
    t.OutputName("Y");
    ExpectAllOnCuda(t.SerializedModel());
    const std::vector<Tensor> expected = t.RunOn("cpu");
    const Session::NamedValues feeds = {{"A", in[0]}, {"skip", in[2]}};
    const std::vector<Tensor> actual = RunOnCuda(t.SerializedModel(), feeds, {{"use_tf32", "0"}});
    EXPECT_EQ(CompareTensors(expected[0], actual[0], 1e-4, 1e-4), "") << "float32 " << what;
    // float16 on the GPU against the same values in float32 on the CPU.
    std::vector<Tensor> half;
    for (const Tensor& x : MatMulSkipInputs(kF16, c, 41)) half.push_back(x);
    CompareFloat16WithCpu(
        "MatMulSkipLayerNormalization", 1, half, [&](OpTester& tester, const std::vector<Tensor>& inputs) {
          BuildMatMulSkip(tester, c, inputs);
        }, 2e-2, 2e-2, "ai.tessera");
  }
}

// MatMul -> Add(bias) -> Add(residual) -> LayerNormalization at BERT-base's FFN output: one fused node on the CUDA
// EP (two nodes in strict mode), both against the CPU EP's unfused graph.
TEST_F(CudaSkipLayerNormTest, FusesBertOutputBlocks) {
  PassTestGraph g;
  g.Input("x", {1, 128, 3072}).Input("r", {1, 128, 768}).Output("y");
  g.Floats("w", {3072, 768}, PassTestGraph::Random(3072 * 768, -0.03f, 0.03f, 1));
  g.Floats("b", {768}, PassTestGraph::Random(768, -1, 1, 2));
  g.Floats("gamma", {768}, PassTestGraph::Random(768, 0.5f, 1.5f, 3));
  g.Floats("beta", {768}, PassTestGraph::Random(768, -0.5f, 0.5f, 4));
  g.Node("MatMul", {"x", "w"}, {"h"});
  g.Node("Add", {"h", "b"}, {"hb"});
  g.Node("Add", {"hb", "r"}, {"sum"});
  SetFloat(g.Node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"}), "epsilon", 1e-12f);
  const std::string model = g.Serialize();
  const Session::NamedValues feeds = g.Feeds(1);
  SessionOptions reference_options = OptionsFor("cpu");
  reference_options.optimization_level = OptimizationLevel::kNone;
  Session reference(TestEnv(), model.data(), model.size(), reference_options);
  const Tensor want = reference.Run(feeds)[0].tensor();
  for (bool strict : {false, true}) {
    SessionOptions options;
    options.AddProvider(kCudaEpName, {{"use_tf32", "0"}, {"enable_skip_layer_norm_strict_mode", strict ? "1" : "0"}});
    Session session = MakeSession(model, options, TestEnv());
    std::vector<std::string> ops;
    for (const PartitionEntry& e : session.Partition())
      if (!e.is_copy) {
        ops.push_back(e.op_type);
        EXPECT_EQ(e.ep, kCudaEpName) << e.op_type;
      }
    const std::vector<std::string> expected_ops =
        strict ? std::vector<std::string>{"MatMul", "SkipLayerNormalization"}
               : std::vector<std::string>{"MatMulSkipLayerNormalization"};
    EXPECT_EQ(ops, expected_ops);
    EXPECT_EQ(CompareTensors(want, session.Run(feeds)[0].tensor(), 1e-4, 1e-4), "") << (strict ? "strict" : "default");
  }
}

}  // namespace
}  // namespace tessera::test
