// GenerationLoop on the CUDA EP: every step after the warm-up replays a captured graph, the caches are written in
// place on the device, and the tokens equal the CPU's step-by-step loop.
#include "tessera/generation_loop.h"

#include <cstring>

#include "cuda/cuda_test_util.h"
#include "unit/session/tiny_decoder_model.h"

namespace tessera::test {
namespace {

using CudaGenerationLoopTest = CudaTest;

std::vector<int64_t> CpuTokens(const std::vector<int64_t>& prompt, size_t new_tokens) {
  Session cpu = MakeSession(TinyDecoderModel(), OptionsFor("cpu"), TestEnv());
  GenerationLoop loop(TestEnv(), cpu);
  return loop.Generate(prompt, new_tokens);
}

SessionOptions CudaOptions(bool graphs) {
  SessionOptions o = OptionsFor("cuda");
  // float32 products as on the CPU: the same argmax
  o.providers[0].options.insert_or_assign(std::string("use_tf32"), std::string("0"));
  if (graphs) o.providers[0].options.insert_or_assign(std::string("enable_cuda_graph"), std::string("1"));
  return o;
}

TEST_F(CudaGenerationLoopTest, StepsReplayOneGraphAndGiveTheCpusTokens) {
  const std::vector<int64_t> prompt{2, 7, 1};
  const std::vector<int64_t> expected = CpuTokens(prompt, 9);
  Session session = MakeSession(TinyDecoderModel(), CudaOptions(true), TestEnv());
  ASSERT_EQ(session.GraphStatus().rfind("explicit", 0), 0u) << session.GraphStatus();
  ExpectAllOnCuda(TinyDecoderModel(), {{"use_tf32", "0"}});
  GenerationLoop loop(TestEnv(), session);
  EXPECT_EQ(loop.Generate(prompt, 9), expected);
  // 11 steps: each of the two bindings warms up once, then is captured (and replayed) and replayed.
  EXPECT_EQ(loop.last_stats().steps, 11u);
  EXPECT_EQ(loop.last_stats().graph_replays, 9u);
  EXPECT_EQ(loop.Generate(prompt, 9), expected);
  EXPECT_EQ(loop.last_stats().graph_replays, 11u);
  const std::vector<int64_t> other{9, 9, 9, 9, 9};
  EXPECT_EQ(loop.Generate(other, 8), CpuTokens(other, 8));
}

// The prompt in one eager run of a prompt model (a separate session, or the step itself with a symbolic sequence
// axis), then steps that replay graphs: the CPU's tokens.
TEST_F(CudaGenerationLoopTest, APromptModelTakesThePromptInOneRunBeforeTheGraphSteps) {
  const std::vector<int64_t> prompt{2, 7, 1, 8, 2};
  const std::vector<int64_t> expected = CpuTokens(prompt, 6);
  Session step = MakeSession(TinyDecoderModel(), CudaOptions(true), TestEnv());
  Session prompt_model = MakeSession(TinyDecoderPromptModel(-1), CudaOptions(false), TestEnv());
  GenerationLoopOptions o;
  o.prompt_session = &prompt_model;
  GenerationLoop loop(TestEnv(), step, o);
  EXPECT_EQ(loop.Generate(prompt, 6), expected);
  EXPECT_EQ(loop.last_stats().prompt_runs, 1u);
  EXPECT_EQ(loop.last_stats().steps, 6u);
  EXPECT_EQ(loop.last_stats().graph_replays, 3u);  // steps 1-5: two warm-ups, then captures and replays
  // The prompt session's automatic graphs (its host shape arithmetic, position + sequence length, feeds a device
  // Add: copied once per captured length): the second prompt of a length is captured, later ones replay.
  ASSERT_EQ(prompt_model.GraphStatus().rfind("automatic:", 0), 0u) << prompt_model.GraphStatus();
  for (int run = 0; run < 3; ++run) EXPECT_EQ(loop.Generate(prompt, 6), expected) << run;
  EXPECT_EQ(prompt_model.AutomaticGraphCaptures(), 1u);
  EXPECT_EQ(prompt_model.AutomaticGraphReplays(), 3u);
  const std::vector<int64_t> shorter{4, 4, 1};
  for (int run = 0; run < 3; ++run) EXPECT_EQ(loop.Generate(shorter, 5), CpuTokens(shorter, 5)) << run;
  EXPECT_EQ(prompt_model.AutomaticGraphCaptures(), 2u);

  // One model for both: eager steps (no explicit graphs for a step of symbolic length).
  Session own = MakeSession(TinyDecoderPromptModel(-1), CudaOptions(false), TestEnv());
  GenerationLoop self(TestEnv(), own);
  EXPECT_EQ(self.Generate(prompt, 6), expected);
  EXPECT_EQ(self.last_stats().prompt_runs, 1u);
  EXPECT_EQ(self.last_stats().graph_replays, 0u);
}

TEST_F(CudaGenerationLoopTest, EagerStepsWithoutGraphCaptureGiveTheSameTokens) {
  const std::vector<int64_t> prompt{4, 4};
  Session session = MakeSession(TinyDecoderModel(), CudaOptions(false), TestEnv());
  GenerationLoop loop(TestEnv(), session);
  EXPECT_EQ(loop.Generate(prompt, 10), CpuTokens(prompt, 10));
  EXPECT_EQ(loop.last_stats().graph_replays, 0u);
}

// The in-place cache write on the device: a binding with present_* on the past tensors changes exactly one row.
TEST_F(CudaGenerationLoopTest, ACacheBoundAsPastAndPresentChangesOneRowOnTheDevice) {
  Session session = MakeSession(TinyDecoderModel(), CudaOptions(false), TestEnv());
  const Shape cache{1, 2, kTinyDecoderMaxLength, 4};
  const Tensor initial = Tensor::FromVector<float>(cache, TinyDecoderWeights(static_cast<size_t>(cache.NumElements()), 3));
  Tensor key = ToCuda(initial), value = ToCuda(initial);
  IoBinding b = session.CreateIoBinding();
  b.BindInput("input_ids", Value(ToCuda(Tensor::FromVector<int64_t>({1, 1}, {6}))));
  b.BindInput("position", Value(ToCuda(Tensor::FromVector<int64_t>({1}, {7}))));
  b.BindInput("past_0_key", Value(key));
  b.BindInput("past_0_value", Value(value));
  b.BindOutput("next_token", MemoryInfo::Host());
  b.BindOutput("next_position", MemoryInfo::Host());
  b.BindOutput("present_0_key", Value(key));
  b.BindOutput("present_0_value", Value(value));
  session.Run(b);
  EXPECT_EQ(b.BoundOutputs()[2].tensor().raw_data(), key.raw_data());
  const Tensor after = ToHost(key);
  size_t changed = 0;
  for (int64_t i = 0; i < cache.NumElements(); ++i) {
    const bool row7 = (i / 4) % kTinyDecoderMaxLength == 7;
    if (after.Data<float>()[i] != initial.Data<float>()[i]) {
      ++changed;
      EXPECT_TRUE(row7) << "element " << i << " outside row 7 changed";
    }
  }
  EXPECT_EQ(changed, 8u);
  EXPECT_EQ(b.BoundOutputs()[1].tensor().Data<int64_t>()[0], 8);
}

}  // namespace
}  // namespace tessera::test
