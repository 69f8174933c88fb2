// RunOptions::timeout_ms: a run that goes past its deadline stops with kTerminated naming the limit -- between
// steps, and between Loop/Scan iterations (a Loop with neither trip count nor a condition that ever turns false
// never ends by itself) -- and the session stays usable.
#include <gtest/gtest.h>

#include <chrono>

#include "ops/subgraph_model_builder.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using Ints = std::vector<int64_t>;
using Clock = std::chrono::steady_clock;

// c = Loop(M, cond)(c0): the body adds one to c and passes cond through; with cond true and no M it never ends.
std::string CountingLoop() {
  GraphProtoBuilder body("forever_body");
  body.Input("i", TensorType(kOnnxInt64, Ints{}))
      .Input("cond_in", TensorType(kOnnxBool, Ints{}))
      .Input("c_in", TensorType(kOnnxInt64, Ints{}))
      .Output("cond_out", TensorType(kOnnxBool, Ints{}))
      .Output("c_out", TensorType(kOnnxInt64, Ints{}))
      .Int64Initializer("one", {}, {1});
  body.Node("Add", {"c_in", "one"}, {"c_out"});
  body.Node("Identity", {"cond_in"}, {"cond_out"});
  GraphProtoBuilder main("main");
  main.Input("M", TensorType(kOnnxInt64, Ints{}))
      .Input("cond", TensorType(kOnnxBool, Ints{}))
      .Output("c", TensorType(kOnnxInt64, Ints{}))
      .Int64Initializer("c0", {}, {0});
  SetAttr(main.Node("Loop", {"M", "cond", "c0"}, {"c"}), "body", body.proto());
  return SerializeModel(main.proto(), 17);
}

TEST(RunDeadlineTest, ANeverEndingLoopStopsAtTheDeadlineAndTheSessionStaysUsable) {
  const std::string model = CountingLoop();
  Session session = MakeSession(model, SessionOptions{}, TestEnv());
  const Tensor forever = Tensor::FromVector<int64_t>({}, {std::numeric_limits<int64_t>::max()});
  const Tensor yes = Tensor::FromVector<bool>({}, {true});
  RunOptions options;
  options.timeout_ms = 50;
  const auto start = Clock::now();
  try {
    session.Run({{"M", forever}, {"cond", yes}}, {}, options);
    FAIL() << "a loop of 2^63 iterations must hit the deadline";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTerminated);
    EXPECT_NE(std::string(e.what()).find("RunOptions::timeout_ms (50 ms)"), std::string::npos) << e.what();
    // Stopped by the Loop between iterations or by the body's own step check: either way the Loop is named.
    EXPECT_NE(std::string(e.what()).find("Loop"), std::string::npos) << e.what();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << "the deadline is checked every iteration";
  // The same options again (the deadline counts from each run's start), then a run that ends in time.
  EXPECT_THROW(session.Run({{"M", forever}, {"cond", yes}}, {}, options), Error);
  options.timeout_ms = 60000;
  const std::vector<Value> out = session.Run({{"M", Tensor::FromVector<int64_t>({}, {7})}, {"cond", yes}}, {}, options);
  EXPECT_EQ(out[0].tensor().ToVector<int64_t>(), (std::vector<int64_t>{7}));
}

TEST(RunDeadlineTest, ALongChainOfStepsStopsBetweenSteps) {
  GraphBuilder builder;
  builder.Input("x", {256});
  std::string previous = "x";
  for (int i = 0; i < 20000; ++i) {
    std::string next = std::to_string(i);
    next.insert(next.begin(), 't');  // not "t" + ...: GCC 12 reports a false -Wrestrict for it
    builder.Node(i % 2 ? "Neg" : "Abs", {previous}, {next});
    previous = next;
  }
  builder.Node("Identity", {previous}, {"y"}).Output("y");
  SessionOptions session_options;
  session_options.optimization_level = OptimizationLevel::kNone;  // keep every step
  Session session = MakeSession(builder.Serialize(), session_options, TestEnv());
  const Tensor x = Tensor::FromVector<float>({256}, std::vector<float>(256, -1.0f));
  RunOptions options;
  options.timeout_ms = 1;
  try {
    session.Run({{"x", x}}, {}, options);
    FAIL() << "20000 steps must take longer than 1 ms";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTerminated);
    EXPECT_NE(std::string(e.what()).find("RunOptions::timeout_ms (1 ms) before"), std::string::npos) << e.what();
  }
  EXPECT_EQ(session.Run({{"x", x}})[0].tensor().ToVector<float>()[0], -1.0f);  // no deadline: it finishes
}

}  // namespace
}  // namespace tessera::test
