// attention_mask_narrowing: an attention mask that only broadcasts a narrower value (Hugging Face's encoder mask:
// And(all-true [1, 1, Q, 1], row [B, 1, 1, K]) -> Expand [B, 1, Q, K] -> Where(., 0, min)) is computed at the
// row's shape and read by the fused Attention with broadcasting; outputs match the unoptimized graph, and masks the
// pass must not narrow (the batch axis widened by the constant, a non-scalar Where branch, another reader) stay.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/passes/attention_mask_narrowing.h"
#include "unit/graph/passes/pass_test_graph.h"

namespace tessera::test {
namespace {

const Config kOff = {{"session.disabled_optimizers", "attention_mask_narrowing"}};

struct MaskSpec {
  int64_t batch = 2, seq = 5, heads = 3, head = 8;
  int64_t constant_batch = 1;      // the all-true constant's batch (2: it widens the mask's batch axis)
  bool expand = true;              // the Expand after the And (Hugging Face writes one)
  bool tensor_branch = false;      // Where's "keep" branch a [K] tensor instead of a scalar
  bool mask_also_output = false;   // the additive mask is a graph output too
};

// q, k, v [B, S, H, D] -> heads, scores / sqrt(D) + mask, Softmax, product with V, heads merged back; the mask from
// `pad` [B, S] as Hugging Face's exporter builds it.
PassTestGraph EncoderMaskGraph(const MaskSpec& c) {
  PassTestGraph g;
  const int64_t b = c.batch, s = c.seq;
  g.Input("q_in", {b, s, c.heads, c.head}).Input("k_in", {b, s, c.heads, c.head});
  g.Input("v_in", {b, s, c.heads, c.head}).Input("pad", {b, s}).Output("y");
  if (c.mask_also_output) g.Output("additive");
  g.Scalar("threshold", 0.5f).Int64s("row_shape", {4}, {b, 1, 1, s}).Int64s("wide_shape", {4}, {b, 1, s, s});
  g.Bytes("all_true", {c.constant_batch, 1, s, 1}, std::vector<int32_t>(static_cast<size_t>(c.constant_batch * s), 1),
          onnx::TensorProto::BOOL);
  // Relu: an op whose shape the pass does not derive, as the export's Gather; the Reshape's stated target suffices.
  g.Node("Relu", {"pad"}, {"pad_relu"});
  g.Node("Greater", {"pad_relu", "threshold"}, {"keep"});
  g.Node("Reshape", {"keep", "row_shape"}, {"row"});
  g.Node("And", {"all_true", "row"}, {"both"});
  std::string wide = "both";
  if (c.expand) {
    g.Node("Expand", {"both", "wide_shape"}, {"wide"});
    wide = "wide";
  }
  if (c.tensor_branch) g.Floats("zero", {s}, std::vector<float>(static_cast<size_t>(s), 0.0f));
  else g.Scalar("zero", 0.0f);
  g.Scalar("minimum", -3.4028235e38f);
  g.Node("Where", {wide, "zero", "minimum"}, {"additive"});
  SetInts(g.Node("Transpose", {"q_in"}, {"q"}), "perm", {0, 2, 1, 3});
  SetInts(g.Node("Transpose", {"k_in"}, {"kt"}), "perm", {0, 2, 3, 1});
  SetInts(g.Node("Transpose", {"v_in"}, {"v"}), "perm", {0, 2, 1, 3});
  g.Scalar("sqrt_d", std::sqrt(static_cast<float>(c.head)));
  g.Node("MatMul", {"q", "kt"}, {"scores"});
  g.Node("Div", {"scores", "sqrt_d"}, {"scaled"});
  g.Node("Add", {"scaled", "additive"}, {"masked"});
  SetInt(g.Node("Softmax", {"masked"}, {"p"}), "axis", -1);
  g.Node("MatMul", {"p", "v"}, {"o"});
  SetInts(g.Node("Transpose", {"o"}, {"y"}), "perm", {0, 2, 1, 3});
  return g;
}

TEST(AttentionMaskNarrowingTest, HuggingFaceEncoderMaskBecomesARow) {
  const PassTestGraph g = EncoderMaskGraph({});
  const std::vector<std::string> ops = OpsFused(g);
  EXPECT_EQ(Count(ops, "Attention"), 1u);
  EXPECT_EQ(Count(ops, "And"), 0u);
  EXPECT_EQ(Count(ops, "Expand"), 0u);
  EXPECT_EQ(Count(ops, "Where"), 1u);
  ExpectFusedOutputs(g, 1e-5f);
  const std::vector<std::string> off = OpsAt(g, OptimizationLevel::kAll, kOff, kFusedAttentionOnCpu);
  EXPECT_EQ(Count(off, "And"), 1u);
  EXPECT_EQ(Count(off, "Expand"), 1u);
  // Without the Expand (the And alone broadcasts the row) the same.
  MaskSpec no_expand;
  no_expand.expand = false;
  const PassTestGraph h = EncoderMaskGraph(no_expand);
  EXPECT_EQ(Count(OpsFused(h), "And"), 0u);
  ExpectFusedOutputs(h, 1e-5f);
}

// Called on a graph that already holds the fused node: the mask's shape becomes the row's, derived through the
// Reshape's constant target (the model states no intermediate shapes).
TEST(AttentionMaskNarrowingTest, TheMaskTakesTheRowsShape) {
  PassTestGraph g;
  g.Import("ai.tessera", 1);
  g.Input("q", {2, 5, 3, 8}).Input("k", {2, 5, 3, 8}).Input("v", {2, 5, 3, 8}).Input("pad", {2, 5}).Output("y");
  g.Scalar("threshold", 0.0f).Int64s("row_shape", {4}, {0, 1, 1, -1}).Int64s("wide_shape", {4}, {2, 1, 5, 5});
  g.Bytes("all_true", {1, 1, 5, 1}, std::vector<int32_t>(5, 1), onnx::TensorProto::BOOL);
  g.Scalar("zero", 0.0f).Scalar("minimum", -1e30f);
  g.Node("Greater", {"pad", "threshold"}, {"keep"});
  g.Node("Reshape", {"keep", "row_shape"}, {"row"});
  g.Node("And", {"row", "all_true"}, {"both"});
  g.Node("Expand", {"both", "wide_shape"}, {"wide"});
  g.Node("Where", {"wide", "zero", "minimum"}, {"additive"});
  auto& node = g.Node("Attention", {"q", "k", "v", "additive"}, {"y"});
  node.set_domain("ai.tessera");
  for (const char* axes : {"q_axes", "k_axes", "v_axes", "out_axes"}) SetInts(node, axes, {0, 2, 1, 3});
  std::unique_ptr<Model> model = LoadForPasses(g);
  Graph& graph = *model->graph;
  EXPECT_EQ(NarrowAttentionMasks(graph), 2u);  // the Expand, then the And, under the Where
  size_t ands = 0, expands = 0;
  for (const auto& n : graph.nodes) {
    ands += n->op_type == "And";
    expands += n->op_type == "Expand";
  }
  EXPECT_EQ(ands, 0u);
  EXPECT_EQ(expands, 0u);
  const ValueInfo* mask = graph.FindValueInfo("additive");
  ASSERT_NE(mask, nullptr);
  ASSERT_TRUE(mask->shape.has_value());
  std::vector<int64_t> dims;
  for (const Dim& d : *mask->shape) dims.push_back(d.value);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 1, 1, 5}));
  EXPECT_EQ(NarrowAttentionMasks(graph), 0u);
  ExpectSameOutputs(g, OptimizationLevel::kAll, 1e-5f);
}

TEST(AttentionMaskNarrowingTest, MasksThatMustNotNarrowStay) {
  // The all-true constant widens the batch axis ([2, 1, Q, 1] against a row of batch 1): the batch the kernel
  // computes would change.
  MaskSpec wider;
  wider.batch = 1;
  wider.constant_batch = 2;
  const PassTestGraph widened = EncoderMaskGraph(wider);
  EXPECT_EQ(Count(OpsFused(widened), "And"), 1u);
  ExpectFusedOutputs(widened, 1e-5f);
  // A branch of Where that is a tensor: the Where is not a broadcast of its condition alone.
  MaskSpec tensor_branch;
  tensor_branch.tensor_branch = true;
  const PassTestGraph branch = EncoderMaskGraph(tensor_branch);
  EXPECT_EQ(Count(OpsFused(branch), "Expand"), 1u);
  ExpectFusedOutputs(branch, 1e-5f);
  // The additive mask is also a graph output: its shape is the model's.
  MaskSpec output;
  output.mask_also_output = true;
  const PassTestGraph read_twice = EncoderMaskGraph(output);
  EXPECT_EQ(Count(OpsFused(read_twice), "Expand"), 1u);
  ExpectFusedOutputs(read_twice, 1e-5f);
}

}  // namespace
}  // namespace tessera::test
