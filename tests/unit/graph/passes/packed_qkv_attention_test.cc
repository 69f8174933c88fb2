// graph/passes/packed_qkv_attention: an attention over the three thirds of one merged projection reads them in
// place (one Reshape of the projection, no Split), with results equal to the unpacked attention's; what the pass
// must leave alone stays; Attention's qkv_packed form refuses operands it cannot read.
#include <gtest/gtest.h>

#include "unit/graph/passes/attention_graphs.h"

namespace tessera::test {
namespace {

const Config kUnpacked = {{"session.disabled_optimizers", "packed_qkv_attention"}};

AttentionSpec Projected(AttentionSpec::Projections projections, bool sdpa = false) {
  AttentionSpec spec;
  spec.projections = projections;
  spec.sdpa = sdpa;
  return spec;
}

std::vector<std::string> Ops(const PassTestGraph& g, const Config& config = {}) {
  return OpsAt(g, OptimizationLevel::kAll, config, kFusedAttentionOnCpu);
}

TEST(PackedQkvAttentionTest, ReadsTheMergedProjectionOfPyTorchsViews) {
  for (bool sdpa : {false, true}) {
    const PassTestGraph g = AttentionGraph(Projected(AttentionSpec::Projections::kViewOfShape, sdpa));
    const std::vector<std::string> ops = Ops(g);
    EXPECT_EQ(Count(ops, "Split"), 0u) << sdpa;
    EXPECT_EQ(Count(ops, "Shape"), 0u) << "the size queries feeding the removed Reshapes go too";
    EXPECT_EQ(Count(ops, "Reshape"), 1u);
    EXPECT_EQ(Count(ops, "Attention"), 1u);
    // Without the pass: the merged product's Split and the three views.
    const std::vector<std::string> unpacked = Ops(g, kUnpacked);
    EXPECT_EQ(Count(unpacked, "Split"), 1u);
    EXPECT_EQ(Count(unpacked, "Reshape"), 3u);
    for (int64_t batch : {1, 3}) ExpectFusedOutputs(g, 1e-5f, batch);
  }
}

TEST(PackedQkvAttentionTest, ReadsTheMergedProjectionOfConstantViews) {
  const PassTestGraph g = AttentionGraph(Projected(AttentionSpec::Projections::kConstantView));
  const std::vector<std::string> ops = Ops(g);
  EXPECT_EQ(Count(ops, "Split"), 0u);
  EXPECT_EQ(Count(ops, "Reshape"), 1u);
  ExpectFusedOutputs(g, 1e-5f, 2);
}

// The packed and unpacked attentions give the same bits: only where K and V are read from changes.
TEST(PackedQkvAttentionTest, SameResultsAsTheUnpackedAttention) {
  const PassTestGraph g = AttentionGraph(Projected(AttentionSpec::Projections::kViewOfShape));
  Environment env;
  const std::string bytes = g.Serialize();
  Session packed(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kAll, {}, kFusedAttentionOnCpu));
  Session unpacked(env, bytes.data(), bytes.size(),
                   OptionsAt(OptimizationLevel::kAll, kUnpacked, kFusedAttentionOnCpu));
  const Session::NamedValues feeds = g.Feeds(2);
  const Tensor a = packed.Run(feeds)[0].tensor();
  const Tensor b = unpacked.Run(feeds)[0].tensor();
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.NumElements(); ++i) ASSERT_EQ(a.Data<float>()[i], b.Data<float>()[i]) << i;
}

// x [N, 5, 6] -> q, k, v projections [N, 5, 8] -> Reshape [0, 0, 2, 4] -> the eager attention, with `edit` changing
// one thing the pass must not accept.
PassTestGraph EditedGraph(const std::function<void(PassTestGraph&)>& edit) {
  PassTestGraph g;
  g.Input("x", {-1, 5, 6}).Output("y");
  g.Int64s("view", {4}, {0, 0, 2, 4}).Scalar("root", 2.0f);
  unsigned seed = 7;
  for (const std::string name : {"q", "k", "v"}) {
    g.Floats("W" + name, {6, 8}, PassTestGraph::Random(48, -0.5f, 0.5f, seed++));
    g.Node("MatMul", {"x", "W" + name}, {name + "_p"});
    g.Node("Reshape", {name + "_p", name == "v" ? "v_view" : "view"}, {name + "_in"});
  }
  SetInts(g.Node("Transpose", {"q_in"}, {"q"}), "perm", {0, 2, 1, 3});
  SetInts(g.Node("Transpose", {"k_in"}, {"kt"}), "perm", {0, 2, 3, 1});
  SetInts(g.Node("Transpose", {"v_in"}, {"v"}), "perm", {0, 2, 1, 3});
  g.Node("MatMul", {"q", "kt"}, {"s"});
  g.Node("Div", {"s", "root"}, {"scaled"});
  SetInt(g.Node("Softmax", {"scaled"}, {"p"}), "axis", -1);
  g.Node("MatMul", {"p", "v"}, {"o"});
  SetInts(g.Node("Transpose", {"o"}, {"y"}), "perm", {0, 2, 1, 3});
  edit(g);
  return g;
}

TEST(PackedQkvAttentionTest, LeavesWhatItCannotReadInPlaceAlone) {
  struct Case {
    const char* what;
    std::function<void(PassTestGraph&)> edit;
  };
  const std::vector<Case> cases = {
      {"V viewed as one head of 8 (broadcast over the heads)", [](PassTestGraph& g) { g.Int64s("v_view", {4}, {0, 0, 1, 8}); }},
      {"V's head count from the data (-1)", [](PassTestGraph& g) { g.Int64s("v_view", {4}, {0, 0, -1, 4}); }},
      {"V's leading dims not kept", [](PassTestGraph& g) { g.Int64s("v_view", {4}, {-1, 5, 2, 4}); }},
      {"a projection also read as a value",
       [](PassTestGraph& g) {
         g.Int64s("v_view", {4}, {0, 0, 2, 4}).Output("k_sum");
         g.Node("ReduceSum", {"k_p"}, {"k_sum"});
       }},
      {"a size query of the last dim",
       [](PassTestGraph& g) {
         g.Int64s("v_view", {4}, {0, 0, 2, 4}).Int64s("two", {}, {2}).Output("width");
         g.Node("Shape", {"q_p"}, {"q_shape"});
         g.Node("Gather", {"q_shape", "two"}, {"width_i"});
         SetInt(g.Node("Cast", {"width_i"}, {"width"}), "to", onnx::TensorProto::FLOAT);
       }},
  };
  for (const Case& c : cases) {
    const PassTestGraph g = EditedGraph(c.edit);
    const std::vector<std::string> ops = Ops(g);
    EXPECT_EQ(Count(ops, "Attention"), 1u) << c.what;
    EXPECT_EQ(Count(ops, "Split"), 1u) << c.what;
    ExpectFusedOutputs(g, 1e-5f, 2);
  }
  // The same graph with equal views is packed.
  const PassTestGraph same = EditedGraph([](PassTestGraph& g) { g.Int64s("v_view", {4}, {0, 0, 2, 4}); });
  EXPECT_EQ(Count(Ops(same), "Split"), 0u);
  ExpectFusedOutputs(same, 1e-5f, 2);
}

// ai.tessera::Attention with qkv_packed = 1 written by hand: operands it cannot read are refused, naming the node.
std::string PackedAttentionModel(bool with_k) {
  PassTestGraph g;
  g.Import("ai.tessera", 1);
  g.Input("p", {1, 5, -1, 4}).Output("y");  // the head dim symbolic: any count reaches the kernel
  if (with_k) g.Input("k", {1, 5, 2, 4});
  auto& node = g.Node("Attention", {"p", with_k ? "k" : "", ""}, {"y"});
  node.set_domain("ai.tessera");
  node.set_name("packed");
  for (const char* axes : {"q_axes", "k_axes", "v_axes", "out_axes"}) SetInts(node, axes, {0, 2, 1, 3});
  SetInt(node, "qkv_packed", 1);
  return g.Serialize();
}

TEST(PackedQkvAttentionTest, RefusesOperandsItCannotRead) {
  Environment env;
  const std::string good = PackedAttentionModel(false);
  Session session(env, good.data(), good.size(), OptionsAt(OptimizationLevel::kNone));
  const Session::NamedValues feeds = {
      {"p", Value(Tensor::FromVector<float>(Shape{1, 5, 6, 4}, PassTestGraph::Random(120, -1, 1, 3)))}};
  EXPECT_EQ(session.Run(feeds)[0].tensor().shape(), Shape({1, 5, 2, 4}));
  try {
    const Session::NamedValues bad = {
        {"p", Value(Tensor::FromVector<float>(Shape{1, 5, 4, 4}, PassTestGraph::Random(80, -1, 1, 3)))}};
    session.Run(bad);
    ADD_FAILURE() << "4 packed heads accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("packed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multiple of 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(session.Run(feeds)[0].tensor().shape(), Shape({1, 5, 2, 4})) << "the session stays usable";
  const std::string with_k = PackedAttentionModel(true);
  try {
    Session refused(env, with_k.data(), with_k.size(), OptionsAt(OptimizationLevel::kNone));
    ADD_FAILURE() << "a K input accepted with qkv_packed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inputs 1 and 2 must be empty"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::test
