// ai.tessera::Attention on the CUDA EP: the fused attention of exported BERT/GPT-2-style subgraphs (eager and
// torch SDPA patterns, float32 and float16) against the unfused graph (on the CPU for float32, on the GPU for
// float16, which the CPU EP's MatMul lacks), over shapes that exercise both kernels (tensor cores: key tiles
// split over warps, partial tiles, head sizes padded to 16, the warps' merge; FMA units: value chunks, query
// tiles) and masks. float32 keeps the float32 tolerance on tensor cores (three TF32 products per step).
#include "cuda/cuda_test_util.h"
#include "unit/graph/passes/attention_graphs.h"

namespace tessera::test {
namespace {

using CudaAttentionTest = CudaTest;

void ExpectFusedOnCudaMatchesUnfusedCpu(const AttentionSpec& spec, int64_t batch) {
  const PassTestGraph g = AttentionGraph(spec);
  const std::string model = g.Serialize();
  const std::string what = "queries " + std::to_string(spec.q_seq > 0 ? spec.q_seq : spec.seq) + " keys " +
                           std::to_string(spec.seq) + " heads " + std::to_string(spec.heads) + " head " +
                           std::to_string(spec.head) + (spec.sdpa ? " sdpa" : " eager") +
                           (spec.mask ? " mask" : "") + (spec.half ? " float16" : " float32");
  {
    SessionOptions options = OptionsFor("cuda");
    Session session(TestEnv(), model.data(), model.size(), options);
    size_t fused_on_cuda = 0;
    for (const PartitionEntry& entry : session.Partition())
      if (entry.op_type == "Attention" && entry.ep == "CUDAExecutionProvider") ++fused_on_cuda;
    EXPECT_EQ(fused_on_cuda, 1u) << what;
  }
  const Session::NamedValues feeds = g.Feeds(batch);
  // float32: the CPU EP's unfused graph; float16 (no float16 MatMul on the CPU): the unfused graph on the GPU.
  SessionOptions reference_options = OptionsFor(spec.half ? "cuda" : "cpu");
  reference_options.optimization_level = spec.half ? OptimizationLevel::kExtended : OptimizationLevel::kNone;
  Session reference(TestEnv(), model.data(), model.size(), reference_options);
  const Tensor want = reference.Run(feeds)[0].tensor();
  const Tensor got = RunOnCuda(model, feeds)[0];
  const double tolerance = spec.half ? 2e-2 : 2e-5;
  EXPECT_EQ(CompareTensors(want, got, tolerance, tolerance), "") << what;
}

TEST_F(CudaAttentionTest, MatchesTheUnfusedGraphOverShapesAndPatterns) {
  struct Geometry {
    int64_t seq, heads, head, batch;
  };
  const std::vector<Geometry> geometries = {
      {5, 3, 8, 2},      // smaller than one tile
      {128, 12, 64, 1},  // BERT-base: two key tiles, eight query tiles per head
      {77, 2, 96, 2},    // partial tiles, head wider than 64
      {33, 1, 160, 1},   // value features in two chunks, smaller key tiles
      {300, 2, 40, 1},   // ten key tiles of 32 over eight warps (two for some), head size padded 40 -> 48
      {64, 4, 128, 2},   // four key tiles of 16, a wide head
      {128, 2, 256, 1},  // a head of 256: fewer warps fit the shared memory in float32
  };
  for (const Geometry& geo : geometries)
    for (bool sdpa : {false, true})
      for (bool half : {false, true}) {
        AttentionSpec spec;
        spec.seq = geo.seq;
        spec.heads = geo.heads;
        spec.head = geo.head;
        spec.sdpa = sdpa;
        spec.half = half;
        ExpectFusedOnCudaMatchesUnfusedCpu(spec, geo.batch);
      }
}

// One query over cached keys, as a decoder's step after a prompt (GPT-2 with past key/values): one query tile,
// key tiles shared by the warps.
TEST_F(CudaAttentionTest, OneQueryOverCachedKeys) {
  for (int64_t keys : {1, 17, 33, 129, 144, 1000, 4500})  // 4500: beyond the one-query kernel's 4096 keys
    for (bool sdpa : {false, true})
      for (bool half : {false, true}) {
        AttentionSpec spec;
        spec.q_seq = 1;
        spec.seq = keys;
        spec.heads = 12;
        spec.head = 64;
        spec.sdpa = sdpa;
        spec.half = half;
        ExpectFusedOnCudaMatchesUnfusedCpu(spec, 2);
      }
}

// Masks with a row per query ([N, 1, queries, keys], as Hugging Face's exports expand theirs): float16 additive rows
// and Boolean rows (torch SDPA), 16-byte aligned rows (copied with the keys in the float16 kernel) and others (read
// element by element), one and several key tiles.
TEST_F(CudaAttentionTest, MasksWithARowPerQuery) {
  for (int64_t seq : {16, 72, 128, 200, 21})
    for (bool sdpa : {false, true}) {
      AttentionSpec spec;
      spec.seq = seq;
      spec.heads = 4;
      spec.head = 64;
      spec.sdpa = sdpa;
      spec.query_mask = true;
      spec.half = true;
      ExpectFusedOnCudaMatchesUnfusedCpu(spec, 2);
    }
}

TEST_F(CudaAttentionTest, WithoutAMask) {
  for (bool sdpa : {false, true})
    for (bool half : {false, true}) {
      AttentionSpec spec;
      spec.seq = 40;
      spec.sdpa = sdpa;
      spec.mask = false;
      spec.half = half;
      ExpectFusedOnCudaMatchesUnfusedCpu(spec, 3);
    }
}

// Most mask values below the threshold: many queries see no key at all (0 behind the IsNaN guard). float32 against
// the CPU, float16 against the unfused graph on the GPU; 16 keys: the float16 kernel copies the Boolean rows.
TEST_F(CudaAttentionTest, FullyMaskedQueriesGiveZerosBehindTheNanGuard) {
  for (int64_t seq : {6, 16})
    for (bool half : {false, true}) {
      AttentionSpec spec;
      spec.seq = seq;
      spec.sdpa = true;
      spec.head = 16;
      spec.half = half;
      const PassTestGraph g = AttentionGraph(spec);
      const std::string model = g.Serialize();
      Session::NamedValues feeds = g.Feeds(2);
      std::vector<float> mask(2 * seq * seq, -2.0f);  // Greater(m, -1.5) is false: masked
      for (int64_t i = 0; i < 2 * seq * seq; i += seq == 6 ? 7 : 37) mask[i] = 1.0f;  // some rows keep nothing
      feeds[3].second = Value(Tensor::FromVector<float>(Shape{2, 1, seq, seq}, mask));
      SessionOptions reference_options = OptionsFor(half ? "cuda" : "cpu");
      reference_options.optimization_level = half ? OptimizationLevel::kExtended : OptimizationLevel::kNone;
      Session reference(TestEnv(), model.data(), model.size(), reference_options);
      const Tensor want = reference.Run(feeds)[0].tensor();
      const Tensor got = RunOnCuda(model, feeds)[0];
      const double tolerance = half ? 2e-2 : 2e-5;
      EXPECT_EQ(CompareTensors(want, got, tolerance, tolerance), "") << seq << (half ? " float16" : " float32");
    }
}

// The cache-update form (graph/passes/cache_update_fusion.h) on the CUDA EP: one query writes its cache rows in the
// one-query kernel's launch, several queries through ScatterElements' kernel before the attention; both give the
// unfused graph's attention and caches (CPU EP), into fresh outputs and updated in place through an IoBinding that
// binds each updated cache to the device tensor it was read from.
TEST_F(CudaAttentionTest, CacheUpdateFormMatchesTheUnfusedGraph) {
  for (int64_t queries : {int64_t{1}, int64_t{3}})
    for (int64_t index : {int64_t{5}, int64_t{-7}}) {
      DecodingStepSpec spec;
      spec.heads = 3;
      spec.positions = 40;
      spec.head = 64;
      spec.queries = queries;
      spec.index = index;
      const PassTestGraph g = DecodingStepGraph(spec);
      const std::string model = g.Serialize();
      const std::string what = std::to_string(queries) + " queries at " + std::to_string(index);
      Session cuda(TestEnv(), model.data(), model.size(), OptionsFor("cuda"));
      std::vector<std::string> ops;
      for (const PartitionEntry& entry : cuda.Partition())
        if (!entry.is_copy) ops.push_back(entry.op_type + "@" + entry.ep);
      EXPECT_EQ(ops, std::vector<std::string>{"Attention@CUDAExecutionProvider"}) << what;
      const Session::NamedValues feeds = g.Feeds();
      SessionOptions reference_options = OptionsFor("cpu");
      reference_options.optimization_level = OptimizationLevel::kNone;
      Session reference(TestEnv(), model.data(), model.size(), reference_options);
      const std::vector<Value> want = reference.Run(feeds);
      const std::vector<Tensor> got = RunOnCuda(model, feeds);
      ASSERT_EQ(got.size(), 3u);
      for (size_t i = 0; i < 3; ++i)
        EXPECT_EQ(CompareTensors(want[i].tensor(), got[i], 2e-5, 2e-5), "") << what << ", output " << i;

      IoBinding binding(cuda);
      Tensor past_k, past_v;
      for (const auto& [name, value] : feeds) {
        const Tensor on_device = ToCuda(value.tensor());
        if (name == "past_k") past_k = on_device;
        if (name == "past_v") past_v = on_device;
        binding.BindInput(name, Value(on_device));
      }
      binding.BindOutput("present_k", Value(past_k));
      binding.BindOutput("present_v", Value(past_v));
      binding.BindOutput("y", CudaDevice().device_memory);
      cuda.Run(binding);
      binding.SynchronizeOutputs();
      EXPECT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), past_k.raw_data()) << what;
      EXPECT_EQ(CompareTensors(want[1].tensor(), ToHost(past_k), 2e-5, 2e-5), "") << what << ", keys in place";
      EXPECT_EQ(CompareTensors(want[2].tensor(), ToHost(past_v), 2e-5, 2e-5), "") << what << ", values in place";
      EXPECT_EQ(CompareTensors(want[0].tensor(), ToHost(binding.BoundOutputs()[2].tensor()), 2e-5, 2e-5), "")
          << what << ", attention with the caches updated in place";
    }
}

// A BERT-style block whose merged projection the attention reads in place (graph/passes/packed_qkv_attention.h):
// no Split on the GPU, results as the unfused graph's, in float32 and float16, at BERT-base's shape (the
// register-softmax kernel in float16) and a small one (partial tiles, head size 8).
TEST_F(CudaAttentionTest, PackedProjectionsMatchTheUnfusedGraph) {
  struct Geometry {
    int64_t batch, seq, heads, head;
  };
  for (const Geometry& geo : {Geometry{1, 128, 12, 64}, Geometry{2, 5, 3, 8}, Geometry{2, 77, 2, 96}})
    for (bool half : {false, true}) {
      SelfAttentionBlockSpec spec;
      spec.batch = geo.batch;
      spec.seq = geo.seq;
      spec.heads = geo.heads;
      spec.head = geo.head;
      spec.half = half;
      const PassTestGraph g = SelfAttentionBlockGraph(spec);
      const std::string model = g.Serialize();
      const std::string what = "seq " + std::to_string(geo.seq) + " heads " + std::to_string(geo.heads) + " head " +
                               std::to_string(geo.head) + (half ? " float16" : " float32");
      {
        Session session(TestEnv(), model.data(), model.size(), OptionsFor("cuda"));
        size_t splits = 0, attention_on_cuda = 0;
        for (const PartitionEntry& entry : session.Partition()) {
          splits += entry.op_type == "Split";
          attention_on_cuda += entry.op_type == "Attention" && entry.ep == "CUDAExecutionProvider";
        }
        EXPECT_EQ(splits, 0u) << what;
        EXPECT_EQ(attention_on_cuda, 1u) << what;
      }
      const Session::NamedValues feeds = g.Feeds();
      SessionOptions reference_options = OptionsFor(half ? "cuda" : "cpu");
      reference_options.optimization_level = half ? OptimizationLevel::kExtended : OptimizationLevel::kNone;
      Session reference(TestEnv(), model.data(), model.size(), reference_options);
      const Tensor want = reference.Run(feeds)[0].tensor();
      // float32 products in float32 (not TF32), as the CPU reference computes them.
      const Tensor got = RunOnCuda(model, feeds, {{"use_tf32", "0"}})[0];
      const double tolerance = half ? 3e-2 : 1e-4;
      EXPECT_EQ(CompareTensors(want, got, tolerance, tolerance), "") << what;
    }
}

// com.microsoft MultiHeadAttention in its encoder form runs on the CUDA EP through the fused Attention
// (graph/passes/mha_lowering.h), with a [B, T] key padding mask in the biased cases: every node on the GPU, results as
// the CPU EP gives.
TEST_F(CudaAttentionTest, MultiHeadAttentionRunsOnTheFusedKernel) {
  std::vector<int32_t> keep(2 * 9, 1);
  for (int j = 6; j < 9; ++j) keep[9 + j] = 0;  // the second sequence padded after 6 keys
  for (DataType type : {kF32, kF16})
    for (bool with_bias : {false, true}) {
      OpTester t("MultiHeadAttention", 1, "com.microsoft");
      t.Attr("num_heads", int64_t{4});
      t.Input("query", RandomTensor(type, {2, 7, 64}, 1, -1, 1))
          .Input("key", RandomTensor(type, {2, 9, 64}, 2, -1, 1))
          .Input("value", RandomTensor(type, {2, 9, 32}, 3, -1, 1));
      if (with_bias) t.Input("bias", RandomTensor(type, {160}, 4, -0.5, 0.5), true);
      else t.OmittedInput();
      if (with_bias) t.Input("key_padding_mask", Tensor::FromVector<int32_t>({2, 9}, keep));  // [B, T]
      else t.OmittedInput();
      t.Input("attention_bias", RandomTensor(type, {1, 4, 7, 9}, 5, -1, 1));
      t.OutputName("output");
      t.Tolerance(type == kF16 ? 5e-3 : 1e-3, type == kF16 ? 5e-3 : 1e-3);
      CompareOnCuda(t);
    }
}

}  // namespace
}  // namespace tessera::test
