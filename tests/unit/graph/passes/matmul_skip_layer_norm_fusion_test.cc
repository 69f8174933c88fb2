#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// The CPU EP keeps MatMul + SkipLayerNormalization unless asked (the fusion is the CUDA EP's); these tests ask, so
// that the pass and the CPU kernel of the fused op run here.
const ProviderOptions kFuseOnCpu = {{"fused_matmul_skip_layer_norm", "1"}};

struct BlockSpec {
  int64_t depth = 24, width = 8;
  bool bias = true, beta = true;
  bool product_as_skip = false;  // Add(residual, product): the product lands in the normalization's skip
  bool float16 = false;          // the block in float16 between Casts of the float inputs and output
};

// BERT's output block: MatMul(x, w) -> Add(bias) -> Add(residual) -> LayerNormalization, x [N, 5, depth].
PassTestGraph OutputBlock(const BlockSpec& s) {
  PassTestGraph g;
  g.Input("x", {-1, 5, s.depth}).Input("r", {-1, 5, s.width}).Output("y");
  const auto constant = [&](const std::string& name, const std::vector<int64_t>& dims, float lo, float hi, int seed) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    if (s.float16) g.Halves(name, dims, PassTestGraph::Random(count, lo, hi, seed));
    else g.Floats(name, dims, PassTestGraph::Random(count, lo, hi, seed));
  };
  constant("w", {s.depth, s.width}, -0.5f, 0.5f, 1);
  constant("b", {s.width}, -1.0f, 1.0f, 2);
  constant("gamma", {s.width}, 0.5f, 1.5f, 3);
  constant("beta", {s.width}, -0.5f, 0.5f, 4);
  std::string x = "x", r = "r";
  if (s.float16) {
    SetInt(g.Node("Cast", {"x"}, {"x16"}), "to", onnx::TensorProto::FLOAT16);
    SetInt(g.Node("Cast", {"r"}, {"r16"}), "to", onnx::TensorProto::FLOAT16);
    x = "x16";
    r = "r16";
  }
  g.Node("MatMul", {x, "w"}, {"h"});
  std::string product = "h";
  if (s.bias) {
    g.Node("Add", {"h", "b"}, {"hb"});
    product = "hb";
  }
  if (s.product_as_skip) g.Node("Add", {r, product}, {"sum"});
  else g.Node("Add", {product, r}, {"sum"});
  std::vector<std::string> norm_inputs = {"sum", "gamma"};
  if (s.beta) norm_inputs.push_back("beta");
  g.Node("LayerNormalization", norm_inputs, {s.float16 ? "y16" : "y"});
  if (s.float16) SetInt(g.Node("Cast", {"y16"}, {"y"}), "to", onnx::TensorProto::FLOAT);
  return g;
}

TEST(MatMulSkipLayerNormFusionTest, FusesTheProductIntoTheNormalization) {
  for (bool bias : {true, false})
    for (bool beta : {true, false})
      for (bool product_as_skip : {false, true}) {
        BlockSpec s;
        s.bias = bias;
        s.beta = beta;
        s.product_as_skip = product_as_skip;
        const PassTestGraph g = OutputBlock(s);
        EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, {}, kFuseOnCpu),
                  std::vector<std::string>{"MatMulSkipLayerNormalization"})
            << bias << beta << product_as_skip;
        ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f, 3, {}, kFuseOnCpu);
      }
}

// Deeper than a block of the CPU kernel's rows and wider than a vector: 3 x 5 rows, depth 300, 40 columns.
TEST(MatMulSkipLayerNormFusionTest, MatchesTheUnfusedGraphOnWiderRows) {
  BlockSpec s;
  s.depth = 300;
  s.width = 40;
  const PassTestGraph g = OutputBlock(s);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, {}, kFuseOnCpu),
            std::vector<std::string>{"MatMulSkipLayerNormalization"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f, 3, {}, kFuseOnCpu);
}

// float16 (kept so: no float32 regions): the fused kernel adds the product unrounded (the unfused graph rounds it,
// and each sum, to float16).
TEST(MatMulSkipLayerNormFusionTest, FusesFloat16Blocks) {
  BlockSpec s;
  s.float16 = true;
  const PassTestGraph g = OutputBlock(s);
  const Config in_float16 = {{"session.float16_in_float32", "0"}};
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, in_float16, kFuseOnCpu),
            (std::vector<std::string>{"Cast", "Cast", "MatMulSkipLayerNormalization", "Cast"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 2e-2f, 3, in_float16, kFuseOnCpu);
}

TEST(MatMulSkipLayerNormFusionTest, TheCpuEpKeepsTheTwoNodesByDefault) {
  const PassTestGraph g = OutputBlock({});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll), (std::vector<std::string>{"MatMul", "SkipLayerNormalization"}));
}

// Pre-LN transformer (GPT-2): the residual stream (the normalization's sum output) is read again.
TEST(MatMulSkipLayerNormFusionTest, KeepsTheProductWhenTheSumIsRead) {
  PassTestGraph g = OutputBlock({});
  g.Output("z");
  g.Node("Add", {"sum", "y"}, {"z"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, {}, kFuseOnCpu),
            (std::vector<std::string>{"MatMul", "SkipLayerNormalization", "Add"}));
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f, 3, {}, kFuseOnCpu);
}

TEST(MatMulSkipLayerNormFusionTest, KeepsAProductWithOtherReaders) {
  BlockSpec s;
  s.bias = false;
  PassTestGraph g = OutputBlock(s);
  g.Output("h");
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, {}, kFuseOnCpu),
            (std::vector<std::string>{"MatMul", "SkipLayerNormalization"}));
}

// B fed at run time, not an initializer.
TEST(MatMulSkipLayerNormFusionTest, KeepsAProductOfTwoRuntimeOperands) {
  PassTestGraph g;
  g.Input("x", {-1, 5, 8}).Input("w", {8, 8}).Input("r", {-1, 5, 8}).Output("y");
  g.Floats("gamma", {8}, PassTestGraph::Random(8, 0.5f, 1.5f, 3));
  g.Node("MatMul", {"x", "w"}, {"h"});
  g.Node("Add", {"h", "r"}, {"sum"});
  g.Node("LayerNormalization", {"sum", "gamma"}, {"y"});
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, {}, kFuseOnCpu),
            (std::vector<std::string>{"MatMul", "SkipLayerNormalization"}));
}

// com.microsoft::SkipLayerNormalization as ONNX Runtime's optimizer writes it, with a residual that broadcasts.
TEST(MatMulSkipLayerNormFusionTest, FusesContribSkipLayerNormWithABroadcastResidual) {
  PassTestGraph g;
  g.Import("com.microsoft", 1);
  g.Input("x", {-1, 5, 16}).Input("r", {5, 8}).Output("y");
  g.Floats("w", {16, 8}, PassTestGraph::Random(128, -0.5f, 0.5f, 1));
  g.Floats("gamma", {8}, PassTestGraph::Random(8, 0.5f, 1.5f, 3));
  g.Floats("beta", {8}, PassTestGraph::Random(8, -1, 1, 4));
  g.Floats("b", {8}, PassTestGraph::Random(8, -1, 1, 5));
  g.Node("MatMul", {"x", "w"}, {"h"});
  auto& norm = g.Node("SkipLayerNormalization", {"h", "r", "gamma", "beta", "b"}, {"y"});
  norm.set_domain("com.microsoft");
  SetFloat(norm, "epsilon", 1e-5f);
  EXPECT_EQ(OpsAt(g, OptimizationLevel::kAll, {}, kFuseOnCpu),
            std::vector<std::string>{"MatMulSkipLayerNormalization"});
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f, 3, {}, kFuseOnCpu);
}

// An optimized model saved by a session that fused (as a CUDA session would) holds the op; a plain CPU session loads
// and runs it with the CPU kernel.
TEST(MatMulSkipLayerNormFusionTest, ASavedFusedModelRunsOnTheCpu) {
  const PassTestGraph g = OutputBlock({});
  const std::string bytes = g.Serialize();
  const std::string path = testing::TempDir() + "matmul_skip_layer_norm_optimized.onnx";
  {
    Environment env;
    SessionOptions options = OptionsAt(OptimizationLevel::kAll, {}, kFuseOnCpu);
    options.optimized_model_filepath = path;
    Session writer(env, bytes.data(), bytes.size(), options);
  }
  Environment env;
  Session saved(env, path, OptionsAt(OptimizationLevel::kNone));
  std::vector<std::string> ops;
  for (const PartitionEntry& entry : saved.Partition())
    if (!entry.is_copy) ops.push_back(entry.op_type);
  EXPECT_EQ(ops, std::vector<std::string>{"MatMulSkipLayerNormalization"});
  Session reference(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
  const Session::NamedValues feeds = g.Feeds(3);
  const Tensor got = saved.Run(feeds)[0].tensor();
  const Tensor want = reference.Run(feeds)[0].tensor();
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.NumElements(); ++i) EXPECT_NEAR(got.Data<float>()[i], want.Data<float>()[i], 1e-5f);
}

}  // namespace
}  // namespace tessera::test
