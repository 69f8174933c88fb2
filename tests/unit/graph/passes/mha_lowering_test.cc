// mha_lowering: com.microsoft MultiHeadAttention in its encoder form becomes Reshapes around ai.tessera::Attention
// (with the bias folded into Adds of constant slices) and computes what the MultiHeadAttention kernel computes;
// forms the fused op cannot express keep the node.
#include <gtest/gtest.h>

#include "pass_test_graph.h"

namespace tessera::test {
namespace {

// The key padding mask of Mha(): none, the [B] lengths, [B, T] or [B, S, T] (constants).
enum class Padding { kNone, kLengths, kPerKey, kPerQuery };

// query [2, 3, 8], key [2, 5, 8], value [2, 5, 4], 2 heads; options: the projection bias, an attention_bias, the
// key padding mask, unidirectional.
PassTestGraph Mha(bool bias, bool attention_bias, Padding padding = Padding::kNone, bool unidirectional = false) {
  PassTestGraph g;
  g.Import("com.microsoft", 1);
  g.Input("q", {2, 3, 8}).Input("k", {2, 5, 8}).Input("v", {2, 5, 4}).Output("y");
  std::vector<std::string> inputs = {"q", "k", "v", bias ? "bias" : ""};
  if (bias) g.Floats("bias", {20}, PassTestGraph::Random(20, -0.5f, 0.5f, 3));
  if (padding != Padding::kNone || attention_bias) inputs.push_back(padding != Padding::kNone ? "mask" : "");
  if (padding == Padding::kLengths) g.Int32s("mask", {2}, {3, 5});
  if (padding == Padding::kPerKey) g.Int32s("mask", {2, 5}, {1, 1, 1, 0, 0, 1, 0, 1, 1, 1});
  if (padding == Padding::kPerQuery) {
    std::vector<int32_t> keep(30);
    for (size_t i = 0; i < keep.size(); ++i) keep[i] = (i * 7 + 2) % 4 != 0;
    g.Int32s("mask", {2, 3, 5}, keep);
  }
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
      const std::vector<std::string> ops = OpsFused(g);
      EXPECT_EQ(Count(ops, "MultiHeadAttention"), 0u) << ::testing::PrintToString(ops);
      EXPECT_EQ(Count(ops, "Attention"), 1u) << ::testing::PrintToString(ops);
      EXPECT_EQ(Count(ops, "Add"), bias ? 3u : 0u) << ::testing::PrintToString(ops);
      ExpectFusedOutputs(g, 1e-5f, 2);  // against the MultiHeadAttention kernel (kNone)
    }
}

// The [B, T] and [B, S, T] padding masks become the fused op's additive mask (mask_filter_value where 0), with and
// without an attention_bias added to it.
TEST(MhaLoweringTest, PaddingMasksBecomeTheAdditiveMask) {
  for (Padding padding : {Padding::kPerKey, Padding::kPerQuery})
    for (bool attention_bias : {false, true}) {
      const PassTestGraph g = Mha(true, attention_bias, padding);
      const std::vector<std::string> ops = OpsFused(g);
      EXPECT_EQ(Count(ops, "MultiHeadAttention"), 0u) << ::testing::PrintToString(ops);
      EXPECT_EQ(Count(ops, "Attention"), 1u) << ::testing::PrintToString(ops);
      EXPECT_EQ(Count(ops, "Add"), attention_bias ? 4u : 3u) << ::testing::PrintToString(ops);
      ExpectFusedOutputs(g, 1e-5f, 2);
    }
}

TEST(MhaLoweringTest, FormsTheFusedOpCannotExpressKeepTheNode) {
  EXPECT_EQ(Count(OpsFused(Mha(true, false, Padding::kLengths)), "MultiHeadAttention"), 1u);
  EXPECT_EQ(Count(OpsFused(Mha(true, false, Padding::kNone, /*unidirectional=*/true)),
                  "MultiHeadAttention"),
            1u);
  EXPECT_EQ(Count(OpsAt(Mha(true, true), OptimizationLevel::kExtended), "MultiHeadAttention"), 1u);  // level all only
}

}  // namespace
}  // namespace tessera::test
