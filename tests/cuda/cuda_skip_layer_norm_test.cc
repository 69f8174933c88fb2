// SkipLayerNormalization on the CUDA EP against the CPU EP (float32 and float16, strict and default
// `enable_skip_layer_norm_strict_mode`, with and without beta and bias, parameters fed or constant, broadcast skip, the
// sum output; the
// word-per-thread kernel's row counts and widths and the block kernel's), and
// the fused residual Add + LayerNormalization in strict mode against the unfused graph on the GPU, bit for bit.
#include "cuda/cuda_test_util.h"
#include "ops/skip_layer_norm_model.h"
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

}  // namespace
}  // namespace tessera::test
