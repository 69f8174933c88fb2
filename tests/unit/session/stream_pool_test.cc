// Stream sets for concurrent runs (session/stream_pool.h) on the simulated device, whose streams are real
// asynchronous queues (one worker thread each): runs from several threads take stream sets of their own, share
// the device arena (stream fences order its reuse across sets), and give the results of serial runs.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "test_env.h"
#include "threads_at_once.h"
#include "unit/session/copy_race_model.h"

namespace tessera::test {
namespace {

constexpr int64_t kN = 128;  // naive MatMuls on the simulated device: runs last long enough to overlap
constexpr int kThreads = 4;

SessionOptions TestingOptions(ProviderOptions provider_options = {}) {
  SessionOptions options;
  options.AddProvider(kTestingEpName, std::move(provider_options));
  return options;
}

std::vector<float> ToFloats(const Value& v) { return v.tensor().ToVector<float>(); }

struct Feeds {
  Tensor a, b, c;
};

Feeds FeedsFor(int thread) {
  return {CopyRacePattern(kN, 5, thread), CopyRacePattern(kN, 3, 2 * thread + 1), CopyRacePattern(kN, 11, thread + 3)};
}

// Runs `runs` Run(feeds) calls on each of kThreads threads, all released at once, and checks every result
// against `expected[thread]` (bit for bit: the same kernels compute them). Returns the failures, one per thread.
std::vector<std::string> RunConcurrently(Session& session, const std::vector<std::vector<std::vector<float>>>& expected,
                                         int runs, const std::function<Session::NamedValues(int)>& feeds) {
  return RunOnThreadsAtOnce(kThreads, [&](int t, const std::function<void()>& released) -> std::string {
    const Session::NamedValues named = feeds(t);
    released();
    std::string failure;
    for (int r = 0; r < runs; ++r) {
      std::vector<Value> out = session.Run(named);
      for (size_t o = 0; o < out.size(); ++o)
        if (ToFloats(out[o]) != expected[t][o])
          failure = "output " + std::to_string(o) + " differs in run " + std::to_string(r);
    }
    return failure;
  });
}

Session::NamedValues RaceFeeds(int thread) {
  const Feeds f = FeedsFor(thread);
  return {{"a", Value(f.a)}, {"b", Value(f.b)}, {"c", Value(f.c)}};
}

// The outputs of one run per thread's feeds, from a session that runs one at a time.
std::vector<std::vector<std::vector<float>>> SerialResults(const std::string& model, const SessionOptions& options,
                                                           const std::function<Session::NamedValues(int)>& feeds) {
  SessionOptions serial = options;
  serial.stream_sets = 1;
  Session session = MakeSession(model, serial, TestEnv());
  std::vector<std::vector<std::vector<float>>> expected;
  for (int t = 0; t < kThreads; ++t) {
    expected.emplace_back();
    for (const Value& v : session.Run(feeds(t))) expected.back().push_back(ToFloats(v));
  }
  return expected;
}

TEST(StreamPoolTest, ConcurrentRunsTakeStreamSetsOfTheirOwnAndMatchSerialRuns) {
  const std::string model = CopyRaceModel(kN, "Sigmoid");
  const auto expected = SerialResults(model, TestingOptions(), RaceFeeds);
  Session session = MakeSession(model, TestingOptions(), TestEnv());
  EXPECT_EQ(session.StreamSets(), 1u);
  session.Run(RaceFeeds(0));
  EXPECT_EQ(session.StreamSets(), 1u) << "a single caller runs on the primary set";
  const std::vector<std::string> failures = RunConcurrently(session, expected, 4, RaceFeeds);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_GT(session.StreamSets(), 1u) << "runs released together overlapped but shared one stream set";
  EXPECT_LE(session.StreamSets(), static_cast<size_t>(kThreads));
}

TEST(StreamPoolTest, ConcurrentRunsWithCopyStreamsMatchSerialRuns) {
  const std::string model = CopyRaceModel(kN, "Sigmoid");
  const SessionOptions options = TestingOptions({{"copy_streams", "1"}});
  const auto expected = SerialResults(model, options, RaceFeeds);
  Session session = MakeSession(model, options, TestEnv());
  const std::vector<std::string> failures = RunConcurrently(session, expected, 4, RaceFeeds);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_GT(session.StreamSets(), 1u);
}

TEST(StreamPoolTest, StreamSetsBoundsTheSetsAndRunsBeyondItShareThem) {
  const std::string model = CopyRaceModel(kN, "Sigmoid");
  SessionOptions options = TestingOptions();
  options.stream_sets = 2;
  const auto expected = SerialResults(model, options, RaceFeeds);
  Session session = MakeSession(model, options, TestEnv());
  const std::vector<std::string> failures = RunConcurrently(session, expected, 3, RaceFeeds);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_EQ(session.StreamSets(), 2u);
}

TEST(StreamPoolTest, OneSetWhenAskedOrWhenTheEpDoesNotAllowMore) {
  const std::string model = CopyRaceModel(kN, "Sigmoid");
  SessionOptions one = TestingOptions();
  one.stream_sets = 1;
  const SessionOptions no_run_streams = TestingOptions({{"run_streams", "0"}});
  const auto expected = SerialResults(model, one, RaceFeeds);
  for (const SessionOptions& options : {one, no_run_streams}) {
    Session session = MakeSession(model, options, TestEnv());
    const std::vector<std::string> failures = RunConcurrently(session, expected, 2, RaceFeeds);
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
    EXPECT_EQ(session.StreamSets(), 1u);
  }
}

TEST(StreamPoolTest, SessionsWithoutDeviceStreamsHaveNoSets) {
  Session session = MakeSession(CopyRaceModel(kN, "Sigmoid"), OptionsFor("cpu"), TestEnv());
  session.Run(RaceFeeds(0));
  EXPECT_EQ(session.StreamSets(), 0u);
}

TEST(StreamPoolTest, GraphCaptureSessionsKeepOneSet) {
  const std::string model = GraphBuilder()
                                .Input("a", {kN, kN})
                                .Input("b", {kN, kN})
                                .Node("MatMul", {"a", "b"}, {"t"})
                                .Node("MatMul", {"t", "b"}, {"y"})
                                .Output("y")
                                .Serialize();
  const SessionOptions options = TestingOptions({{"enable_graph_capture", "1"}});
  auto feeds = [](int t) -> Session::NamedValues {
    const Feeds f = FeedsFor(t);
    return {{"a", Value(f.a)}, {"b", Value(f.b)}};
  };
  const auto expected = SerialResults(model, options, feeds);
  Session session = MakeSession(model, options, TestEnv());
  const std::vector<std::string> failures = RunConcurrently(session, expected, 2, feeds);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_EQ(session.StreamSets(), 1u);
}

// y = If(cond, then: (a @ b) @ b, else: (a @ a) @ b): the branches run on the simulated device inside the CPU
// EP's If. A concurrent run's branch must run on that run's stream set, not on the primary one.
std::string IfModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("if_model");
  auto add_input = [](onnx::GraphProto* g, const std::string& name, int elem, std::vector<int64_t> dims) {
    onnx::ValueInfoProto* v = g->add_input();
    v->set_name(name);
    auto* tensor = v->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem);
    for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_input(graph, "cond", onnx::TensorProto::BOOL, {});
  add_input(graph, "a", onnx::TensorProto::FLOAT, {kN, kN});
  add_input(graph, "b", onnx::TensorProto::FLOAT, {kN, kN});
  auto branch = [](const std::string& name, const std::string& first_rhs) {
    onnx::GraphProto g;
    g.set_name(name);
    onnx::NodeProto* m1 = g.add_node();
    m1->set_op_type("MatMul");
    m1->set_name(name + "_m1");
    m1->add_input("a");
    m1->add_input(first_rhs);
    m1->add_output(name + "_t");
    onnx::NodeProto* m2 = g.add_node();
    m2->set_op_type("MatMul");
    m2->set_name(name + "_m2");
    m2->add_input(name + "_t");
    m2->add_input("b");
    m2->add_output(name + "_y");
    onnx::ValueInfoProto* out = g.add_output();
    out->set_name(name + "_y");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    return g;
  };
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("If");
  node->set_name("if");
  node->add_input("cond");
  node->add_output("y");
  onnx::AttributeProto* then_attr = node->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  *then_attr->mutable_g() = branch("then", "b");
  onnx::AttributeProto* else_attr = node->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  *else_attr->mutable_g() = branch("else", "a");
  onnx::ValueInfoProto* y = graph->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return model.SerializeAsString();
}

TEST(StreamPoolTest, SubgraphsOfConcurrentRunsRunOnTheirRunsStreams) {
  const std::string model = IfModel();
  auto feeds = [](int t) -> Session::NamedValues {
    const Feeds f = FeedsFor(t);
    return {{"cond", Value(Tensor::FromVector<bool>({}, {t % 2 == 0}))}, {"a", Value(f.a)}, {"b", Value(f.b)}};
  };
  const auto expected = SerialResults(model, TestingOptions(), feeds);
  Session session = MakeSession(model, TestingOptions(), TestEnv());
  const std::vector<std::string> failures = RunConcurrently(session, expected, 3, feeds);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_GT(session.StreamSets(), 1u);
}

}  // namespace
}  // namespace tessera::test
