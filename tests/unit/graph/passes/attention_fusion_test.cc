// graph/passes/attention_fusion: the attention patterns PyTorch exports become one ai.tessera::Attention node
// whose (CPU) results match the unfused graph's, and what the pass must leave alone stays as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "unit/graph/passes/attention_graphs.h"

namespace tessera::test {
namespace {

constexpr int64_t kSeq = 5, kHeads = 3, kHead = 8;  // AttentionSpec's defaults

PassTestGraph EagerAttention(bool with_mask = true) {
  AttentionSpec spec;
  spec.mask = with_mask;
  return AttentionGraph(spec);
}

PassTestGraph SdpaAttention() {
  AttentionSpec spec;
  spec.sdpa = true;
  return AttentionGraph(spec);
}

TEST(AttentionFusionTest, FusesEagerBertAttentionWithItsTransposes) {
  const PassTestGraph g = EagerAttention();
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kExtended), "Softmax"), 1u);
  EXPECT_EQ(OpsFused(g), std::vector<std::string>{"Attention"});
  ExpectFusedOutputs(g, 1e-5f, 2);
}

// GPT-2's eager attention in float16: a Cast of the probabilities to the type they have (cast_elimination removes
// it before the fusion looks).
TEST(AttentionFusionTest, FusesAcrossANoOpCastOfTheProbabilities) {
  for (bool half : {false, true}) {
    AttentionSpec spec;
    spec.cast_probabilities = true;
    spec.half = half;
    const PassTestGraph g = AttentionGraph(spec);
    EXPECT_EQ(Count(OpsFused(g), "Attention"), 1u) << (half ? "float16" : "float32");
    EXPECT_EQ(Count(OpsFused(g), "Softmax"), 0u);
    ExpectFusedOutputs(g, half ? 2e-3f : 1e-5f, 2);
  }
}

TEST(AttentionFusionTest, FusesWithoutAMask) {
  const PassTestGraph g = EagerAttention(false);
  EXPECT_EQ(OpsFused(g), std::vector<std::string>{"Attention"});
  ExpectFusedOutputs(g, 1e-5f, 3);
}

TEST(AttentionFusionTest, FusesTorchSdpaExportWithBooleanMaskAndNanGuard) {
  const PassTestGraph g = SdpaAttention();
  EXPECT_EQ(OpsFused(g), (std::vector<std::string>{"Greater", "Attention"}));
  ExpectFusedOutputs(g, 1e-5f, 2);
}

// Queries whose every key is masked: softmax of -inf everywhere is NaN; the IsNaN/Where guard makes them 0.
TEST(AttentionFusionTest, FullyMaskedQueriesGiveZerosBehindTheNanGuardAndNanWithoutIt) {
  for (bool guard : {true, false}) {
    PassTestGraph g;
    g.Input("q", {-1, kHeads, kSeq, kHead}).Input("kt", {-1, kHeads, kHead, kSeq}).Input("v", {-1, kHeads, kSeq, kHead});
    g.Output("o");
    std::vector<float> mask(kSeq * kSeq, 0.0f);
    for (int64_t j = 0; j < kSeq; ++j) mask[j] = -std::numeric_limits<float>::infinity();  // query 0 sees nothing
    mask[kSeq + 2] = -std::numeric_limits<float>::infinity();
    g.Floats("mask", {1, 1, kSeq, kSeq}, mask).Scalar("zero", 0.0f);
    g.Node("MatMul", {"q", "kt"}, {"s"});
    g.Node("Add", {"mask", "s"}, {"masked"});
    SetInt(g.Node("Softmax", {"masked"}, {"p"}), "axis", 3);
    if (guard) {
      g.Node("IsNaN", {"p"}, {"nan"});
      g.Node("Where", {"nan", "zero", "p"}, {"p0"});
    }
    g.Node("MatMul", {guard ? "p0" : "p", "v"}, {"o"});
    EXPECT_EQ(OpsFused(g), std::vector<std::string>{"Attention"}) << "guard " << guard;
    Environment env;
    const std::string bytes = g.Serialize();
    Session session(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kAll, {}, kFusedAttentionOnCpu));
    const Tensor y = session.Run(g.Feeds(1))[0].tensor();
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t d = 0; d < kHead; ++d) {
        const float value = y.Data<float>()[(h * kSeq + 0) * kHead + d];
        if (guard) EXPECT_EQ(value, 0.0f) << "head " << h;
        else EXPECT_TRUE(std::isnan(value)) << "head " << h;
      }
    if (guard) ExpectFusedOutputs(g, 1e-5f, 1);
  }
}

// Key and value heads broadcast over the query heads (multi-query attention) as MatMul's batch dims do.
TEST(AttentionFusionTest, BroadcastsSingleKeyValueHead) {
  PassTestGraph g;
  g.Input("q", {-1, kHeads, kSeq, kHead}).Input("kt", {-1, 1, kHead, kSeq}).Input("v", {-1, 1, kSeq, kHead}).Output("o");
  g.Scalar("scale", 0.25f);
  g.Node("MatMul", {"q", "kt"}, {"s"});
  g.Node("Mul", {"scale", "s"}, {"scaled"});
  SetInt(g.Node("Softmax", {"scaled"}, {"p"}), "axis", -1);
  g.Node("MatMul", {"p", "v"}, {"o"});
  EXPECT_EQ(OpsFused(g), std::vector<std::string>{"Attention"});
  ExpectFusedOutputs(g, 1e-5f, 2);
}

TEST(AttentionFusionTest, LeavesTheGraphAloneWhenTheProbabilitiesAreAlsoAnOutput) {
  PassTestGraph g = EagerAttention();
  g.Output("p");
  EXPECT_EQ(Count(OpsFused(g), "Attention"), 0u);
  ExpectFusedOutputs(g, 1e-5f, 2);
}

TEST(AttentionFusionTest, KeepsATransposeThatHasOtherReaders) {
  PassTestGraph g = EagerAttention();
  g.Output("v");  // the value heads are also an output (as GPT-2's present key/values are)
  const std::vector<std::string> ops = OpsFused(g);
  EXPECT_EQ(Count(ops, "Attention"), 1u);
  EXPECT_EQ(Count(ops, "Transpose"), 1u);
  ExpectFusedOutputs(g, 1e-5f, 2);
}

TEST(AttentionFusionTest, LeavesSoftmaxOverAnotherAxisAlone) {
  PassTestGraph g;
  g.Input("q", {-1, kHeads, kSeq, kHead}).Input("kt", {-1, kHeads, kHead, kSeq}).Input("v", {-1, kHeads, kSeq, kHead});
  g.Output("o");
  g.Node("MatMul", {"q", "kt"}, {"s"});
  SetInt(g.Node("Softmax", {"s"}, {"p"}), "axis", 2);
  g.Node("MatMul", {"p", "v"}, {"o"});
  EXPECT_EQ(Count(OpsFused(g), "Attention"), 0u);
}

TEST(AttentionFusionTest, LeavesHeadsWiderThanTheKernelsTakeAlone) {
  PassTestGraph g;
  g.Input("q", {1, 1, 4, 3000}).Input("kt", {1, 1, 3000, 4}).Input("v", {1, 1, 4, 8}).Output("o");
  g.Node("MatMul", {"q", "kt"}, {"s"});
  SetInt(g.Node("Softmax", {"s"}, {"p"}), "axis", -1);
  g.Node("MatMul", {"p", "v"}, {"o"});
  EXPECT_EQ(Count(OpsFused(g), "Attention"), 0u);
}

// The CPU kernel's float32 paths (providers/cpu/nn/attention.cc): the blocked kernel in AVX-512 and AVX2 vectors and
// the row kernel, chosen when the kernel is created from TESSERA_CPU_ATTENTION_PATH (unset: the widest this CPU has;
// on a CPU without AVX-512 or AVX2 every setting takes what it has). Sets it for one scope.
class AttentionPath {
 public:
  explicit AttentionPath(const char* path) {
    if (path != nullptr) setenv("TESSERA_CPU_ATTENTION_PATH", path, 1);
  }
  ~AttentionPath() { unsetenv("TESSERA_CPU_ATTENTION_PATH"); }
};

constexpr const char* kAttentionPaths[] = {nullptr, "avx2", "rows"};

// The fused graph's outputs on `threads` intra-op threads against the unfused graph's.
void ExpectFusedOutputsOnThreads(const PassTestGraph& g, int threads, float tolerance, const std::string& what) {
  Environment env;
  const std::string bytes = g.Serialize();
  SessionOptions fused_options = OptionsAt(OptimizationLevel::kAll, {}, kFusedAttentionOnCpu);
  fused_options.intra_op_threads = threads;
  Session fused(env, bytes.data(), bytes.size(), fused_options);
  Session reference(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
  const Session::NamedValues feeds = g.Feeds(2);
  const Tensor got = fused.Run(feeds)[0].tensor();
  const Tensor want = reference.Run(feeds)[0].tensor();
  ASSERT_EQ(got.shape(), want.shape()) << what;
  float worst = 0;
  for (int64_t i = 0; i < got.NumElements(); ++i)
    worst = std::max(worst, std::abs(got.Data<float>()[i] - want.Data<float>()[i]));
  EXPECT_LE(worst, tolerance) << what;
}

// Key counts around the blocked kernel's vector and tile widths (16 / 32 keys per tile column, 8 / 4 query rows per
// tile), fewer than 8 queries (scores by key rows), head sizes that end in a single vector (80, 48) or that only the
// AVX2 vectors or the row kernel take (24, 40, 20), additive masks with one row per batch entry or per query, torch
// SDPA's Boolean mask, and one to four threads.
TEST(AttentionFusionTest, CpuAttentionPathsMatchTheUnfusedGraphAtEveryTileEdge) {
  struct Case {
    int64_t seq, q_seq, heads, head;
    bool mask, query_mask, sdpa;
  };
  const Case cases[] = {
      {130, 0, 3, 64, true, false, false},  // BERT's layout at a length past whole tiles
      {37, 0, 2, 80, true, true, false},    // a mask row per query; columns 64 + 16
      {20, 0, 2, 48, true, false, true},    // Boolean mask
      {9, 0, 2, 24, false, false, false},   // the fewest queries the blocked kernel takes; AVX2 vectors only
      {33, 0, 2, 20, true, false, false},   // head 20: the row kernel everywhere
      {40, 11, 3, 64, true, true, false},   // fewer queries than keys (a prompt after cached keys)
      {40, 1, 3, 64, true, true, false},    // one query (a decoding step): scores by key rows, no panel
      {37, 5, 2, 32, true, false, false},   // a few queries: tiles of four and one by key rows
      {21, 3, 2, 40, false, false, false},  // head 40: AVX2 vectors only by key rows
  };
  for (const char* path : kAttentionPaths) {
    const AttentionPath scope(path);
    for (const Case& c : cases) {
      AttentionSpec spec;
      spec.seq = c.seq;
      spec.q_seq = c.q_seq;
      spec.heads = c.heads;
      spec.head = c.head;
      spec.mask = c.mask;
      spec.query_mask = c.query_mask;
      spec.sdpa = c.sdpa;
      const PassTestGraph g = AttentionGraph(spec);
      ASSERT_EQ(Count(OpsFused(g), "Attention"), 1u);
      for (int threads : {1, 2, 4})
        ExpectFusedOutputsOnThreads(g, threads, 1e-4f,
                                    std::string("path ") + (path ? path : "widest") + ", seq " +
                                        std::to_string(c.seq) + ", head " + std::to_string(c.head) + ", " +
                                        std::to_string(threads) + " thread(s)");
    }
  }
}

// Fully masked queries on every path: 0 behind torch SDPA's IsNaN guard, NaN without it, the other rows exact.
TEST(AttentionFusionTest, CpuAttentionPathsGiveFullyMaskedQueriesZerosOrNan) {
  constexpr int64_t seq = 12, heads = 2, head = 16;
  for (const char* path : kAttentionPaths) {
    const AttentionPath scope(path);
    for (bool guard : {true, false}) {
      PassTestGraph g;
      g.Input("q", {-1, heads, seq, head}).Input("kt", {-1, heads, head, seq}).Input("v", {-1, heads, seq, head});
      g.Output("o");
      std::vector<float> mask(seq * seq, 0.0f);
      for (int64_t j = 0; j < seq; ++j) mask[3 * seq + j] = -std::numeric_limits<float>::infinity();  // query 3
      mask[5 * seq + 7] = -std::numeric_limits<float>::infinity();
      g.Floats("mask", {1, 1, seq, seq}, mask).Scalar("zero", 0.0f);
      g.Node("MatMul", {"q", "kt"}, {"s"});
      g.Node("Add", {"mask", "s"}, {"masked"});
      SetInt(g.Node("Softmax", {"masked"}, {"p"}), "axis", 3);
      if (guard) {
        g.Node("IsNaN", {"p"}, {"nan"});
        g.Node("Where", {"nan", "zero", "p"}, {"p0"});
      }
      g.Node("MatMul", {guard ? "p0" : "p", "v"}, {"o"});
      Environment env;
      const std::string bytes = g.Serialize();
      SessionOptions options = OptionsAt(OptimizationLevel::kAll, {}, kFusedAttentionOnCpu);
      options.intra_op_threads = 2;
      Session session(env, bytes.data(), bytes.size(), options);
      const Tensor y = session.Run(g.Feeds(2))[0].tensor();
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t d = 0; d < head; ++d) {
            const float value = y.Data<float>()[((b * heads + h) * seq + 3) * head + d];
            if (guard) EXPECT_EQ(value, 0.0f) << (path ? path : "widest");
            else EXPECT_TRUE(std::isnan(value)) << (path ? path : "widest");
          }
      if (guard) ExpectFusedOutputs(g, 1e-4f, 2);
    }
  }
}

TEST(AttentionFusionTest, RejectsMismatchedOperandsWithAnErrorNamingTheNode) {
  PassTestGraph g;
  g.Input("q", {1, 2, 4, 8}).Input("kt", {1, 2, 8, -1}).Input("v", {1, 2, 4, 8}).Output("o");
  g.Node("MatMul", {"q", "kt"}, {"s"});
  SetInt(g.Node("Softmax", {"s"}, {"p"}), "axis", -1);
  g.Node("MatMul", {"p", "v"}, {"o"});
  Environment env;
  const std::string bytes = g.Serialize();
  Session session(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kAll, {}, kFusedAttentionOnCpu));
  ASSERT_EQ(Count(OpsFused(g), "Attention"), 1u);
  Session::NamedValues feeds = g.Feeds(4);
  feeds[1].second = Value(Tensor::FromVector<float>(Shape{1, 2, 8, 3}, std::vector<float>(48, 1.0f)));  // 3 keys, V has 4
  try {
    session.Run(feeds);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Attention"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("K has 3 positions but V has 4"), std::string::npos) << e.what();
  }
  EXPECT_EQ(session.Run(g.Feeds(4)).size(), 1u) << "the session stays usable";
}

}  // namespace
}  // namespace tessera::test
