// packed_qkv_attention: an ai.tessera::Attention whose Q, K and V are Reshapes of one Split of the merged projection
// reads the projection itself (one Reshape to 3 x heads heads, attribute packed_heads); the Split and the three
// Reshapes go, outputs match the unoptimized graph, and what the pass must leave alone stays.
#include <gtest/gtest.h>

#include "graph/passes/packed_qkv_attention.h"
#include "unit/graph/passes/attention_graphs.h"

namespace tessera::test {
namespace {

const Config kOff = {{"session.disabled_optimizers", "packed_qkv_attention"}};

TEST(PackedQkvAttentionTest, TheAttentionReadsTheMergedProjection) {
  const PassTestGraph g = SelfAttentionBlockGraph({});
  const std::vector<std::string> ops = OpsFused(g);
  EXPECT_EQ(Count(ops, "Attention"), 1u);
  EXPECT_EQ(Count(ops, "Split"), 0u);
  EXPECT_EQ(Count(ops, "Reshape"), 2u);  // the projection's heads, the merged output
  ExpectFusedOutputs(g, 1e-5f);
  // Without the pass: the merged product's Split and the three Reshapes.
  const std::vector<std::string> off = OpsAt(g, OptimizationLevel::kAll, kOff, kFusedAttentionOnCpu);
  EXPECT_EQ(Count(off, "Split"), 1u);
  EXPECT_EQ(Count(off, "Reshape"), 4u);
}

// Stated and inferred (-1) leading entries regroup the rows of the merged projection as they do each part's; a 0
// copies a dim of the part, which needs its rank (here x's: the product of a 2-D weight keeps its input's rank).
TEST(PackedQkvAttentionTest, StatedInferredOrCopiedLeadingEntries) {
  const std::vector<std::vector<int64_t>> leads = {{0, 0}, {-1, 5}, {2, 5}, {2, -1}, {-1, 0}, {1, 10}};
  for (const std::vector<int64_t>& lead : leads) {
    SelfAttentionBlockSpec spec;
    spec.target_lead = lead;
    if (lead[0] == 1) spec.batch = 1, spec.seq = 10;  // [1, 10] over the rows of [1, 10]
    const PassTestGraph g = SelfAttentionBlockGraph(spec);
    EXPECT_EQ(Count(OpsFused(g), "Split"), 0u) << lead[0] << ", " << lead[1];
    ExpectFusedOutputs(g, 1e-5f);
  }
  SelfAttentionBlockSpec symbolic;
  symbolic.batch = -1;
  const PassTestGraph g = SelfAttentionBlockGraph(symbolic);
  EXPECT_EQ(Count(OpsFused(g), "Split"), 0u);
  ExpectFusedOutputs(g, 1e-5f, 3);
  // The head count inferred: [0, 0, -1, 8] and [2, 5, -1, 8].
  for (const std::vector<int64_t>& lead : std::vector<std::vector<int64_t>>{{0, 0}, {2, 5}}) {
    SelfAttentionBlockSpec spec;
    spec.target_lead = lead;
    spec.infer_heads = true;
    const PassTestGraph inferred = SelfAttentionBlockGraph(spec);
    EXPECT_EQ(Count(OpsFused(inferred), "Split"), 0u) << lead[0] << ", " << lead[1] << ", -1";
    ExpectFusedOutputs(inferred, 1e-5f);
  }
}

// A projection of unknown rank (Softplus(x) with a symbolic batch: the pass does not trace ranks through Softplus):
// a 0 entry, which could copy its last dim, keeps the Split; stated entries do not need the rank. Relu(x) with the
// same symbolic batch takes x's stated rank (the pass traces it back), and with every dim known Relu's shape gives it.
TEST(PackedQkvAttentionTest, CopiedEntriesOfAProjectionOfUnknownRankStay) {
  SelfAttentionBlockSpec spec;
  spec.input_activation = "Softplus";
  spec.batch = -1;
  const PassTestGraph unknown = SelfAttentionBlockGraph(spec);
  EXPECT_EQ(Count(OpsFused(unknown), "Split"), 1u);
  ExpectFusedOutputs(unknown, 1e-5f);
  spec.target_lead = {-1, 5};
  const PassTestGraph stated = SelfAttentionBlockGraph(spec);
  EXPECT_EQ(Count(OpsFused(stated), "Split"), 0u);
  ExpectFusedOutputs(stated, 1e-5f);
  spec.target_lead = {0, 0};
  spec.input_activation = "Relu";
  const PassTestGraph traced = SelfAttentionBlockGraph(spec);
  EXPECT_EQ(Count(OpsFused(traced), "Split"), 0u);
  ExpectFusedOutputs(traced, 1e-5f);
  spec.batch = 2;
  const PassTestGraph known = SelfAttentionBlockGraph(spec);
  EXPECT_EQ(Count(OpsFused(known), "Split"), 0u);
  ExpectFusedOutputs(known, 1e-5f);
}

// The rank traced back through a stack of encoder layers (products, SkipLayerNormalization, the merge Reshape of
// the layer before, whose target is computed from a Shape) to the graph input: every layer's Split goes.
TEST(PackedQkvAttentionTest, RanksTracedThroughAStackOfLayers) {
  SelfAttentionBlockSpec spec;
  spec.batch = -1;
  spec.layers = 3;
  const PassTestGraph g = SelfAttentionBlockGraph(spec);
  const std::vector<std::string> ops = OpsFused(g);
  EXPECT_EQ(Count(ops, "Split"), 0u);
  EXPECT_EQ(Count(ops, "Attention"), 3u);
  ExpectFusedOutputs(g, 1e-4f);
}

TEST(PackedQkvAttentionTest, APartWithAnotherReaderStays) {
  SelfAttentionBlockSpec spec;
  spec.q_also_output = true;
  const PassTestGraph g = SelfAttentionBlockGraph(spec);
  const std::vector<std::string> ops = OpsFused(g);
  EXPECT_EQ(Count(ops, "Split"), 1u);
  EXPECT_EQ(Count(ops, "Attention"), 1u);
  ExpectFusedOutputs(g, 1e-5f);
}

// The packed form written by hand: its heads axis must hold 3 x packed_heads heads; a mismatch is a clear error and
// the session stays usable.
TEST(PackedQkvAttentionTest, HeadCountsThatDoNotMatchPackedHeadsAreRejected) {
  PassTestGraph g;
  g.Import("ai.tessera", 1);
  g.Input("qkv", {1, 4, -1, 8}).Output("y");  // heads symbolic: a feed of any head count reaches the kernel
  auto& node = g.Node("Attention", {"qkv", "qkv", "qkv"}, {"y"});
  node.set_domain("ai.tessera");
  SetInts(node, "q_axes", {0, 2, 1, 3});
  SetInts(node, "k_axes", {0, 2, 1, 3});
  SetInts(node, "v_axes", {0, 2, 1, 3});
  SetInts(node, "out_axes", {0, 2, 1, 3});
  SetInt(node, "packed_heads", 2);
  Environment env;
  const std::string bytes = g.Serialize();
  Session session(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
  const std::vector<Value> good = session.Run(g.Feeds(6));
  EXPECT_EQ(good[0].tensor().shape(), Shape({1, 4, 2, 8}));
  const Tensor five_heads = Tensor::FromVector<float>(Shape{1, 4, 5, 8}, std::vector<float>(160, 1.0f));
  const Session::NamedValues bad = {{"qkv", Value(five_heads)}};
  try {
    session.Run(bad);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Q has 5 heads, expected 3 x packed_heads = 6"), std::string::npos) << e.what();
  }
  EXPECT_EQ(session.Run(g.Feeds(6))[0].tensor().shape(), Shape({1, 4, 2, 8}));
}

// The packed form computes what separate Q, K, V tensors holding the same heads give.
TEST(PackedQkvAttentionTest, PackedHeadsAreQThenKThenV) {
  PassTestGraph packed;
  packed.Import("ai.tessera", 1);
  packed.Input("qkv", {2, 3, 6, 4}).Output("y");
  auto& node = packed.Node("Attention", {"qkv", "qkv", "qkv"}, {"y"});
  node.set_domain("ai.tessera");
  for (const char* axes : {"q_axes", "k_axes", "v_axes", "out_axes"}) SetInts(node, axes, {0, 2, 1, 3});
  SetInt(node, "packed_heads", 2);
  SetFloat(node, "scale", 0.5f);
  PassTestGraph separate;
  separate.Import("ai.tessera", 1);
  separate.Input("q", {2, 3, 2, 4}).Input("k", {2, 3, 2, 4}).Input("v", {2, 3, 2, 4}).Output("y");
  auto& plain = separate.Node("Attention", {"q", "k", "v"}, {"y"});
  plain.set_domain("ai.tessera");
  for (const char* axes : {"q_axes", "k_axes", "v_axes", "out_axes"}) SetInts(plain, axes, {0, 2, 1, 3});
  SetFloat(plain, "scale", 0.5f);
  const Session::NamedValues feeds = packed.Feeds();
  const Tensor& qkv = feeds[0].second.tensor();
  Session::NamedValues parts;
  for (int64_t part = 0; part < 3; ++part) {
    std::vector<float> values;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t d = 0; d < 4; ++d) values.push_back(qkv.Data<float>()[((b * 3 + s) * 6 + part * 2 + h) * 4 + d]);
    parts.push_back({std::string(1, "qkv"[part]), Value(Tensor::FromVector<float>(Shape{2, 3, 2, 4}, values))});
  }
  Environment env;
  const std::string a = packed.Serialize(), b = separate.Serialize();
  Session packed_session(env, a.data(), a.size(), OptionsAt(OptimizationLevel::kNone));
  Session separate_session(env, b.data(), b.size(), OptionsAt(OptimizationLevel::kNone));
  const Tensor got = packed_session.Run(feeds)[0].tensor();
  const Tensor want = separate_session.Run(parts)[0].tensor();
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.NumElements(); ++i) EXPECT_EQ(got.Data<float>()[i], want.Data<float>()[i]) << i;
}

}  // namespace
}  // namespace tessera::test
