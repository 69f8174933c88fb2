// GenerationLoop and in-place IoBinding updates: the loop's tokens equal a step-by-step loop of Run(feeds) on the
// host, on the CPU and through the simulated device; an output bound to an input's tensor behaves as if every input
// were read before any output was written.
#include "tessera/generation_loop.h"

#include <gtest/gtest.h>

#include <cstring>

#include "test_env.h"
#include "unit/session/graph_builder.h"
#include "unit/session/tiny_decoder_model.h"

namespace tessera::test {
namespace {

Tensor Zeros(const Shape& shape) {
  Tensor t = Tensor::Allocate(DataType::kFloat, shape);
  std::memset(t.raw_data(), 0, t.SizeInBytes());
  return t;
}

// The decoding loop written with Run(feeds) and host tensors: presents fed back as pasts, the prompt one token per
// step. Returns the new tokens.
std::vector<int64_t> ReferenceTokens(Session& session, const std::vector<int64_t>& prompt, size_t new_tokens) {
  const Shape cache{1, 2, kTinyDecoderMaxLength, 4};
  Tensor key = Zeros(cache), value = Zeros(cache);
  std::vector<int64_t> out;
  int64_t token = prompt[0];
  for (size_t t = 0; t + 1 < prompt.size() + new_tokens; ++t) {
    if (t < prompt.size()) token = prompt[t];
    std::vector<Value> r = session.Run({{"input_ids", Value(Tensor::FromVector<int64_t>({1, 1}, {token}))},
                                        {"position", Value(Tensor::FromVector<int64_t>({1}, {static_cast<int64_t>(t)}))},
                                        {"past_0_key", Value(key)},
                                        {"past_0_value", Value(value)}});
    token = r[0].tensor().Data<int64_t>()[0];
    EXPECT_EQ(r[1].tensor().Data<int64_t>()[0], static_cast<int64_t>(t) + 1);
    key = r[2].tensor();
    value = r[3].tensor();
    if (t + 1 >= prompt.size()) out.push_back(token);
  }
  return out;
}

class GenerationLoopTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GenerationLoopTest, TokensEqualAStepByStepLoopOfRuns) {
  if (!HasEpDevice(GetParam())) GTEST_SKIP() << "no " << GetParam() << " device in this environment";
  Session session = MakeSession(TinyDecoderModel(), OptionsFor(GetParam()), TestEnv());
  const std::vector<int64_t> prompt{3, 1, 4};
  const std::vector<int64_t> expected = ReferenceTokens(session, prompt, 8);
  ASSERT_EQ(expected.size(), 8u);
  GenerationLoop loop(TestEnv(), session);
  EXPECT_EQ(loop.max_length(), kTinyDecoderMaxLength);
  EXPECT_EQ(loop.batch(), 1);
  EXPECT_EQ(loop.Generate(prompt, 8), expected);
  EXPECT_EQ(loop.last_stats().steps, prompt.size() + 8 - 1);
  EXPECT_EQ(loop.last_stats().new_tokens, 8u);
  // The caches start over: a second call, and a different prompt, give what a fresh loop gives.
  EXPECT_EQ(loop.Generate(prompt, 8), expected);
  const std::vector<int64_t> other{7};
  EXPECT_EQ(loop.Generate(other, 11), ReferenceTokens(session, other, 11));
}

TEST_P(GenerationLoopTest, StopsAtTheEndOfSequenceToken) {
  if (!HasEpDevice(GetParam())) GTEST_SKIP() << "no " << GetParam() << " device in this environment";
  Session session = MakeSession(TinyDecoderModel(), OptionsFor(GetParam()), TestEnv());
  const std::vector<int64_t> prompt{5, 9};
  const std::vector<int64_t> all = ReferenceTokens(session, prompt, 9);
  GenerationLoopOptions o;
  o.eos_token = all[3];
  size_t first = 0;
  while (all[first] != o.eos_token) ++first;
  GenerationLoop loop(TestEnv(), session, o);
  EXPECT_EQ(loop.Generate(prompt, 9), std::vector<int64_t>(all.begin(), all.begin() + first + 1));
}

// The prompt through a prompt model in one run (or in runs of its fixed length): the same tokens as step by step.
TEST_P(GenerationLoopTest, APromptModelTakesThePromptInOneRunAndGivesTheSameTokens) {
  if (!HasEpDevice(GetParam())) GTEST_SKIP() << "no " << GetParam() << " device in this environment";
  Session step = MakeSession(TinyDecoderModel(), OptionsFor(GetParam()), TestEnv());
  Session prompt_model = MakeSession(TinyDecoderPromptModel(-1), OptionsFor(GetParam()), TestEnv());
  const std::vector<int64_t> prompt{3, 1, 4, 1, 5};
  const std::vector<int64_t> expected = ReferenceTokens(step, prompt, 6);
  GenerationLoopOptions o;
  o.prompt_session = &prompt_model;
  GenerationLoop loop(TestEnv(), step, o);
  EXPECT_EQ(loop.Generate(prompt, 6), expected);
  EXPECT_EQ(loop.last_stats().prompt_runs, 1u);
  EXPECT_EQ(loop.last_stats().steps, 1u + 5u);
  // A one-token prompt goes through the step.
  const std::vector<int64_t> one{7};
  EXPECT_EQ(loop.Generate(one, 4), ReferenceTokens(step, one, 4));
  EXPECT_EQ(loop.last_stats().prompt_runs, 0u);
  // With an end-of-sequence token that the prompt run itself chooses.
  GenerationLoopOptions stop = o;
  stop.eos_token = expected[0];
  GenerationLoop stopping(TestEnv(), step, stop);
  EXPECT_EQ(stopping.Generate(prompt, 6), std::vector<int64_t>{expected[0]});
}

TEST_P(GenerationLoopTest, AStepWithASymbolicSequenceAxisIsItsOwnPromptModel) {
  if (!HasEpDevice(GetParam())) GTEST_SKIP() << "no " << GetParam() << " device in this environment";
  Session step = MakeSession(TinyDecoderModel(), OptionsFor(GetParam()), TestEnv());
  Session any_length = MakeSession(TinyDecoderPromptModel(-1), OptionsFor(GetParam()), TestEnv());
  const std::vector<int64_t> prompt{2, 7, 1, 8};
  GenerationLoop loop(TestEnv(), any_length);
  EXPECT_EQ(loop.Generate(prompt, 7), ReferenceTokens(step, prompt, 7));
  EXPECT_EQ(loop.last_stats().prompt_runs, 1u);
  EXPECT_EQ(loop.last_stats().steps, 7u);
  EXPECT_EQ(loop.last_stats().new_tokens, 7u);
}

TEST_P(GenerationLoopTest, APromptModelOfFixedLengthTakesThePromptInRunsOfThatLength) {
  if (!HasEpDevice(GetParam())) GTEST_SKIP() << "no " << GetParam() << " device in this environment";
  Session step = MakeSession(TinyDecoderModel(), OptionsFor(GetParam()), TestEnv());
  Session pairs = MakeSession(TinyDecoderPromptModel(2), OptionsFor(GetParam()), TestEnv());
  GenerationLoopOptions o;
  o.prompt_session = &pairs;
  GenerationLoop loop(TestEnv(), step, o);
  const std::vector<int64_t> odd{3, 1, 4, 1, 5};  // two runs of two tokens, the fifth through the step
  EXPECT_EQ(loop.Generate(odd, 5), ReferenceTokens(step, odd, 5));
  EXPECT_EQ(loop.last_stats().prompt_runs, 2u);
  EXPECT_EQ(loop.last_stats().steps, 2u + 1u + 4u);
  const std::vector<int64_t> even{9, 2, 6, 5};  // two runs, the second chooses the first new token
  EXPECT_EQ(loop.Generate(even, 5), ReferenceTokens(step, even, 5));
  EXPECT_EQ(loop.last_stats().prompt_runs, 2u);
  EXPECT_EQ(loop.last_stats().steps, 2u + 4u);
}

INSTANTIATE_TEST_SUITE_P(Eps, GenerationLoopTest, ::testing::Values("cpu", "testing"));

TEST(GenerationLoopErrorsTest, APromptModelThatDoesNotMatchTheStepIsRejected) {
  Session step = MakeSession(TinyDecoderModel(), OptionsFor("cpu"), TestEnv());
  GraphBuilder g;
  g.Input("input_ids", {1, -1}, 7).Node("Identity", {"input_ids"}, {"next_token"}).Output("next_token", 7);
  Session unrelated = MakeSession(g.Serialize(), OptionsFor("cpu"), TestEnv());
  GenerationLoopOptions o;
  o.prompt_session = &unrelated;
  try {
    GenerationLoop loop(TestEnv(), step, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("has no prompt model input 'position'"), std::string::npos) << e.what();
  }
  // A prompt model whose batch differs from the step's.
  GraphBuilder wide;
  wide.Input("input_ids", {2, -1}, 7).Input("position", {1}, 7).Node("Identity", {"input_ids"}, {"next_token"})
      .Node("Identity", {"position"}, {"next_position"}).Output("next_token", 7).Output("next_position", 7);
  Session batch2 = MakeSession(wide.Serialize(), OptionsFor("cpu"), TestEnv());
  o.prompt_session = &batch2;
  try {
    GenerationLoop loop(TestEnv(), step, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the prompt model's 'input_ids' has shape [2,N]; the prompt model takes [1, S]"),
              std::string::npos)
        << e.what();
  }
}

TEST(GenerationLoopErrorsTest, APromptAndNewTokensBeyondTheCacheAreRejected) {
  Session session = MakeSession(TinyDecoderModel(), OptionsFor("cpu"), TestEnv());
  GenerationLoop loop(TestEnv(), session);
  try {
    loop.Generate(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}, 6);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("need 13 cache positions; the caches hold 12"), std::string::npos) << e.what();
  }
  EXPECT_THROW(loop.Generate(std::vector<int64_t>{}, 3), Error);
  EXPECT_THROW(loop.Generate(std::vector<std::vector<int64_t>>{{1}, {2}}, 3), Error);  // batch 2 for a batch-1 model
  EXPECT_EQ(loop.Generate(std::vector<int64_t>{1, 2}, 3).size(), 3u);                  // still usable
}

TEST(GenerationLoopErrorsTest, AModelWithoutTheNamedInputsOrCachesIsRejected) {
  Session session = MakeSession(TinyDecoderModel(), OptionsFor("cpu"), TestEnv());
  GenerationLoopOptions o;
  o.past_prefix = "cache_";
  try {
    GenerationLoop loop(TestEnv(), session, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no cache input (a name starting with 'cache_')"), std::string::npos)
        << e.what();
  }
  o = GenerationLoopOptions{};
  o.position = "pos";
  try {
    GenerationLoop loop(TestEnv(), session, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the model has no input 'pos'"), std::string::npos) << e.what();
  }
}

// ---- in-place IoBinding updates -----------------------------------------------------------------------------------

// A one-step run of the tiny decoder bound with present_0_key / present_0_value on the past tensors themselves.
TEST(InPlaceBindingTest, ACacheBoundAsPastAndPresentGetsTheNewRowAndKeepsTheRest) {
  for (const std::string ep : {"cpu", "testing"}) {
    SCOPED_TRACE(ep);
    Session session = MakeSession(TinyDecoderModel(), OptionsFor(ep), TestEnv());
    const Shape cache{1, 2, kTinyDecoderMaxLength, 4};
    std::vector<float> initial = TinyDecoderWeights(static_cast<size_t>(cache.NumElements()), 9);
    Tensor key = Tensor::FromVector<float>(cache, initial), value = Tensor::FromVector<float>(cache, initial);
    const Tensor token = Tensor::FromVector<int64_t>({1, 1}, {4});
    const Tensor position = Tensor::FromVector<int64_t>({1}, {5});
    const std::vector<Value> expected = session.Run({{"input_ids", Value(token)},
                                                     {"position", Value(position)},
                                                     {"past_0_key", Value(Tensor::FromVector<float>(cache, initial))},
                                                     {"past_0_value", Value(Tensor::FromVector<float>(cache, initial))}});
    IoBinding b = session.CreateIoBinding();
    b.BindInput("input_ids", Value(token));
    b.BindInput("position", Value(position));
    b.BindInput("past_0_key", Value(key));
    b.BindInput("past_0_value", Value(value));
    b.BindOutput("next_token", MemoryInfo::Host());
    b.BindOutput("next_position", MemoryInfo::Host());
    b.BindOutput("present_0_key", Value(key));
    b.BindOutput("present_0_value", Value(value));
    session.Run(b);
    EXPECT_EQ(b.BoundOutputs()[0].tensor().Data<int64_t>()[0], expected[0].tensor().Data<int64_t>()[0]);
    const auto k = key.Span<float>(), k_expected = expected[2].tensor().Span<float>();
    const auto v = value.Span<float>(), v_expected = expected[3].tensor().Span<float>();
    EXPECT_EQ(std::vector<float>(k.begin(), k.end()), std::vector<float>(k_expected.begin(), k_expected.end()));
    EXPECT_EQ(std::vector<float>(v.begin(), v.end()), std::vector<float>(v_expected.begin(), v_expected.end()));
    size_t changed = 0;
    for (size_t i = 0; i < initial.size(); ++i) changed += k[i] != initial[i];
    EXPECT_EQ(changed, 8u);  // row 5 of both heads
  }
}

// out = ScatterElements(x, i, u) bound to x's tensor, while another node reads x after the scatter: that node must
// see the original x, so the scatter may not write in place.
TEST(InPlaceBindingTest, AnInputReadAfterTheUpdateIsReadBeforeTheOutputIsWritten) {
  const std::string model = GraphBuilder()
                                .Input("x", {2, 3})
                                .Input("u", {1, 3})
                                .Int64Initializer("i", {1, 3}, {1, 0, 1})
                                .Node("ScatterElements", {"x", "i", "u"}, {"scattered"})
                                .IntAttribute("axis", 0)
                                .Node("Add", {"scattered", "x"}, {"sum"})
                                .Output("scattered")
                                .Output("sum")
                                .Serialize();
  for (const std::string ep : {"cpu", "testing"}) {
    SCOPED_TRACE(ep);
    Session session = MakeSession(model, OptionsFor(ep), TestEnv());
    Tensor x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor u = Tensor::FromVector<float>({1, 3}, {10, 20, 30});
    IoBinding b = session.CreateIoBinding();
    b.BindInput("x", Value(x));
    b.BindInput("u", Value(u));
    b.BindOutput("scattered", Value(x));
    b.BindOutput("sum", MemoryInfo::Host());
    session.Run(b);
    const auto s = x.Span<float>();
    EXPECT_EQ(std::vector<float>(s.begin(), s.end()), (std::vector<float>{1, 20, 3, 10, 5, 30}));
    const auto sum = b.BoundOutputs()[1].tensor().Span<float>();
    EXPECT_EQ(std::vector<float>(sum.begin(), sum.end()), (std::vector<float>{2, 22, 6, 14, 10, 36}));
  }
}

// An element-wise output bound to its own input's tensor: computed elsewhere and copied in after the run.
TEST(InPlaceBindingTest, AnyOutputBoundToAnInputsTensorIsCorrect) {
  const std::string model = GraphBuilder()
                                .Input("x", {4})
                                .Input("y", {4})
                                .Node("Mul", {"x", "y"}, {"product"})
                                .Node("Add", {"x", "y"}, {"sum"})
                                .Output("product")
                                .Output("sum")
                                .Serialize();
  for (const std::string ep : {"cpu", "testing"}) {
    SCOPED_TRACE(ep);
    Session session = MakeSession(model, OptionsFor(ep), TestEnv());
    Tensor x = Tensor::FromVector<float>({4}, {1, 2, 3, 4});
    Tensor y = Tensor::FromVector<float>({4}, {5, 6, 7, 8});
    IoBinding b = session.CreateIoBinding();
    b.BindInput("x", Value(x));
    b.BindInput("y", Value(y));
    b.BindOutput("product", Value(y));  // the sum still needs the original y
    b.BindOutput("sum", Value(x));      // and the product the original x
    session.Run(b);
    const auto xs = x.Span<float>(), ys = y.Span<float>();
    EXPECT_EQ(std::vector<float>(ys.begin(), ys.end()), (std::vector<float>{5, 12, 21, 32}));
    EXPECT_EQ(std::vector<float>(xs.begin(), xs.end()), (std::vector<float>{6, 8, 10, 12}));
  }
}

}  // namespace
}  // namespace tessera::test
