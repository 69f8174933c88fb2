// mha_lowering: com.microsoft MultiHeadAttention in its encoder form becomes Reshapes around ai.tessera::Attention
// (with the bias folded into Adds of constant slices) and computes what the MultiHeadAttention kernel computes;
// forms the fused op cannot express keep the node.
#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// query [2, 3, 8], key [2, 5, 8], value [2, 5, 4], 2 heads; options: the projection bias, an attention_bias, the
// key padding mask (an int32 input), unidirectional.
PassTestGraph Mha(bool bias, bool attention_bias, bool padding_mask = false, bool unidirectional = false) {
  PassTestGraph g;
  g.Import("com.microsoft", 1);
  g.Input("q", {2, 3, 8}).Input("k", {2, 5, 8}).Input("v", {2, 5, 4}).Output("y");
  std::vector<std::string> inputs = {"q", "k", "v", bias ? "bias" : ""};
  if (bias) g.Floats("bias", {20}, PassTestGraph::Random(20, -0.5f, 0.5f, 3));
  if (padding_mask || attention_bias) inputs.push_back(padding_mask ? "mask" : "");
  if (padding_mask) g.Input("mask", {2, 5}, onnx::TensorProto::INT32);
  if (attention_bias) {
    g.Input("attention_bias", {1, 2, 3, 5});
    inputs.push_back("attention_bias");
  }
  onnx::NodeProto& node = g.Node("MultiHeadAttention", inputs, {"y"});
  node.set_domain("com.microsoft");
  SetInt(node, "num_heads", 2);
  if (unidirectional) SetInt(node, "unidirectional", 1);
  return g;
}

TEST(MhaLoweringTest, TheEncoderFormRunsOnTheFusedAttention) {
  for (bool bias : {false, true})
    for (bool attention_bias : {false, true}) {
      const PassTestGraph g = Mha(bias, attention_bias);
      const std::vector<std::string> ops = OpsAt(g, OptimizationLevel::kAll);
      EXPECT_EQ(Count(ops, "MultiHeadAttention"), 0u) << ::testing::PrintToString(ops);
      EXPECT_EQ(Count(ops, "Attention"), 1u) << ::testing::PrintToString(ops);
      EXPECT_EQ(Count(ops, "Add"), bias ? 3u : 0u) << ::testing::PrintToString(ops);
      ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);  // against the MultiHeadAttention kernel (kNone)
    }
}

TEST(MhaLoweringTest, FormsTheFusedOpCannotExpressKeepTheNode) {
  EXPECT_EQ(Count(OpsAt(Mha(true, false, /*padding_mask=*/true), OptimizationLevel::kAll), "MultiHeadAttention"), 1u);
  EXPECT_EQ(Count(OpsAt(Mha(true, false, false, /*unidirectional=*/true), OptimizationLevel::kAll),
                  "MultiHeadAttention"),
            1u);
  EXPECT_EQ(Count(OpsAt(Mha(true, true), OptimizationLevel::kExtended), "MultiHeadAttention"), 1u);  // level all only
}

}  // namespace
}  // namespace tessera::test
