// cache_update_fusion: a decoding step's key/value cache writes (ScatterElements along the sequence axis) go into
// the ai.tessera::Attention that reads the caches; the fused node gives the attention and both updated caches as
// the unfused graph does.
#include <gtest/gtest.h>

#include <cstring>

#include "attention_graphs.h"

namespace tessera::test {
namespace {

TEST(CacheUpdateFusionTest, BothCacheWritesGoIntoTheAttention) {
  const PassTestGraph g = DecodingStepGraph({});
  EXPECT_EQ(Count(OpsAt(g, OptimizationLevel::kExtended), "ScatterElements"), 2u);
  EXPECT_EQ(OpsFused(g), std::vector<std::string>{"Attention"});
  ExpectFusedOutputs(g, 1e-5f, 2);
}

TEST(CacheUpdateFusionTest, NegativePositionsCountFromTheEnd) {
  const PassTestGraph g = DecodingStepGraph({-2});
  EXPECT_EQ(OpsFused(g), std::vector<std::string>{"Attention"});
  ExpectFusedOutputs(g, 1e-5f, 2);
}

TEST(CacheUpdateFusionTest, AWriteAcrossTheFeaturesStaysAScatter) {
  const PassTestGraph g = DecodingStepGraph({3, 3});
  const std::vector<std::string> ops = OpsFused(g);
  EXPECT_EQ(Count(ops, "ScatterElements"), 1u);  // the key's; the value's write is fused
  EXPECT_EQ(Count(ops, "Attention"), 1u);
  ExpectFusedOutputs(g, 1e-5f, 2);
}

TEST(CacheUpdateFusionTest, UpdatedKeysReadElsewhereStayAScatter) {
  const PassTestGraph g = DecodingStepGraph({3, 2, true});
  const std::vector<std::string> ops = OpsFused(g);
  EXPECT_EQ(Count(ops, "ScatterElements"), 1u);
  EXPECT_EQ(Count(ops, "Attention"), 1u);
  ExpectFusedOutputs(g, 1e-5f, 2);
}

// The fused node updates the caches in place when an IoBinding binds each updated cache to its past tensor (the
// generation loop's form), and gives what the unfused graph gives.
TEST(CacheUpdateFusionTest, UpdatesTheBoundCachesInPlace) {
  const PassTestGraph g = DecodingStepGraph({});
  Environment env;
  const std::string bytes = g.Serialize();
  Session fused(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kAll, {}, kFusedAttentionOnCpu));
  Session reference(env, bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
  const Session::NamedValues feeds = g.Feeds();
  const std::vector<Value> want = reference.Run(feeds);
  IoBinding binding(fused);
  Tensor past_k, past_v;
  for (const auto& [name, value] : feeds) {
    Tensor copy = Tensor::Allocate(value.tensor().type(), value.tensor().shape());
    std::memcpy(copy.raw_data(), value.tensor().raw_data(), copy.SizeInBytes());
    if (name == "past_k") past_k = copy;
    if (name == "past_v") past_v = copy;
    binding.BindInput(name, copy);
  }
  binding.BindOutput("present_k", past_k);
  binding.BindOutput("present_v", past_v);
  binding.BindOutput("y", Tensor::Allocate(DataType::kFloat, Shape{1, 2, 1, 4}));
  fused.Run(binding);
  const std::vector<Value>& got = binding.BoundOutputs();  // present_k, present_v, y: the order bound
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].tensor().raw_data(), past_k.raw_data());
  EXPECT_EQ(got[1].tensor().raw_data(), past_v.raw_data());
  const Tensor* in_order[3] = {&got[2].tensor(), &past_k, &past_v};  // the model's order: y, present_k, present_v
  for (size_t i = 0; i < 3; ++i)
    for (int64_t e = 0; e < want[i].tensor().NumElements(); ++e)
      ASSERT_NEAR(in_order[i]->Data<float>()[e], want[i].tensor().Data<float>()[e], 1e-5f) << "output " << i;
}

}  // namespace
}  // namespace tessera::test
