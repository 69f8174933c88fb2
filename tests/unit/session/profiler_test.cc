// Profiling (SessionOptions::enable_profiling): the Chrome-trace file a session writes, read back with
// the profile reader; device times from the simulated device; EP run and step hooks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "providers/cpu/cpu_ep.h"
#include "session/profile_reader.h"
#include "session/profiler.h"
#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

// y = sigmoid(relu(x) @ W + b)^2; on the testing EP, Sigmoid falls back to the CPU (so there are copies).
std::string MixedModel() {
  std::vector<float> w(12, 0.1f), b = {0.1f, -0.2f, 0.3f};
  return GraphBuilder()
      .Input("x", {-1, 4})
      .FloatInitializer("W", {4, 3}, w)
      .FloatInitializer("b", {3}, b)
      .Node("Relu", {"x"}, {"r"})
      .Node("MatMul", {"r", "W"}, {"m"})
      .Node("Add", {"m", "b"}, {"a"})
      .Node("Sigmoid", {"a"}, {"s"})
      .Node("Mul", {"s", "s"}, {"y"})
      .Output("y")
      .Serialize();
}

Tensor InputX(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n) * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  return Tensor::FromVector<float>({n, 4}, x);
}

// A fresh, empty folder removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("tessera_profiler_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  std::vector<fs::path> Files() const {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path_)) files.push_back(entry.path());
    return files;
  }

 private:
  fs::path path_;
};

SessionOptions Profiled(SessionOptions options, const ScratchDir& dir) {
  options.enable_profiling = true;
  options.profile_file_prefix = (dir.path() / "prof").string();
  return options;
}

std::vector<ProfileEvent> Events(const Profile& profile, const std::string& category, const std::string& name = "") {
  std::vector<ProfileEvent> out;
  for (const ProfileEvent& e : profile.events)
    if (e.phase == "X" && e.category == category && (name.empty() || e.name == name)) out.push_back(e);
  return out;
}

// Plan steps as the profile names them: node names, and "copy <value>" for copies inside the run.
std::multiset<std::string> StepNames(const Session& session) {
  std::multiset<std::string> names;
  for (const PartitionEntry& e : session.Partition()) {
    if (!e.is_copy) names.insert(e.node_name);
    else if (e.copy_from.rfind("feed", 0) != 0) names.insert("copy " + e.node_name);
  }
  return names;
}

bool Within(const ProfileEvent& inner, const ProfileEvent& outer) {
  constexpr double kRoundingUs = 0.002;  // times are written with 3 decimals
  return inner.ts_us >= outer.ts_us - kRoundingUs && inner.ts_us + inner.dur_us <= outer.ts_us + outer.dur_us + kRoundingUs;
}

bool WithinSomeRun(const ProfileEvent& e, const std::vector<ProfileEvent>& runs) {
  for (const ProfileEvent& run : runs)
    if (Within(e, run)) return true;
  return false;
}

TEST(ProfilerTest, OneNodeEventPerStepPerRunWithTypesShapesAndProvider) {
  ScratchDir dir;
  const std::string model = MixedModel();
  Session session = MakeSession(model, Profiled(SessionOptions{}, dir), TestEnv());
  EXPECT_GT(session.ProfilingStartTimeNs(), 0u);
  for (int run = 0; run < 3; ++run) session.Run({{"x", InputX(5)}});
  const std::string path = session.EndProfiling();
  ASSERT_FALSE(path.empty());
  EXPECT_TRUE(std::regex_match(fs::path(path).filename().string(),
                               std::regex(R"(prof_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.json)")))
      << path;
  const Profile profile = ReadProfile(path);

  const std::vector<ProfileEvent> runs = Events(profile, "Session", "model_run");
  ASSERT_EQ(runs.size(), 3u);
  for (const char* phase : {"load", "optimize", "partition", "plan"})
    EXPECT_EQ(Events(profile, "Session", phase).size(), 1u) << phase;

  const std::vector<ProfileEvent> nodes = Events(profile, "Node");
  std::multiset<std::string> expected;
  for (int run = 0; run < 3; ++run)
    for (const std::string& name : StepNames(session)) expected.insert(name);
  std::multiset<std::string> actual;
  for (const ProfileEvent& e : nodes) actual.insert(e.name);
  EXPECT_EQ(actual, expected);

  for (const PartitionEntry& step : session.Partition())
    for (const ProfileEvent& e : nodes)
      if (e.name == step.node_name) {
        EXPECT_EQ(e.op_type(), step.op_type) << e.name;
        EXPECT_EQ(e.provider(), "CPUExecutionProvider") << e.name;
      }
  for (const ProfileEvent& e : nodes) {
    EXPECT_TRUE(WithinSomeRun(e, runs)) << e.name << " at " << e.ts_us;
    EXPECT_GE(e.dur_us, 0);
    EXPECT_EQ(e.tid, runs[0].tid);  // one thread ran everything
    EXPECT_EQ(e.pid, static_cast<int64_t>(getpid()));
  }
  // Relu reads x: float [5,4].
  const ProfileEvent relu = Events(profile, "Node", "r_node").at(0);
  const JsonValue* inputs = relu.args.Find("input_type_shape");
  ASSERT_NE(inputs, nullptr);
  ASSERT_EQ(inputs->items.size(), 1u);
  const JsonValue* dims = inputs->items[0].Find("float");
  ASSERT_NE(dims, nullptr);
  ASSERT_EQ(dims->items.size(), 2u);
  EXPECT_EQ(dims->items[0].number, 5);
  EXPECT_EQ(dims->items[1].number, 4);
  const JsonValue* outputs = relu.args.Find("output_type_shape");
  ASSERT_NE(outputs, nullptr);
  EXPECT_EQ(outputs->items.size(), 1u);
}

TEST(ProfilerTest, DisabledProfilingWritesNothing) {
  ScratchDir dir;
  const std::string model = MixedModel();
  {
    SessionOptions options;
    options.profile_file_prefix = (dir.path() / "prof").string();  // a prefix alone does not enable it
    Session session = MakeSession(model, options, TestEnv());
    session.Run({{"x", InputX(2)}});
    EXPECT_EQ(session.EndProfiling(), "");
    EXPECT_EQ(session.ProfilingStartTimeNs(), 0u);
  }
  EXPECT_TRUE(dir.Files().empty());
}

TEST(ProfilerTest, WrittenWhenTheSessionIsDestroyedAndOnlyOnce) {
  ScratchDir dir;
  const std::string model = MixedModel();
  {
    Session session = MakeSession(model, Profiled(SessionOptions{}, dir), TestEnv());
    session.Run({{"x", InputX(2)}});
  }
  std::vector<fs::path> files = dir.Files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(Events(ReadProfile(files[0]), "Session", "model_run").size(), 1u);

  {
    Session session = MakeSession(model, Profiled(SessionOptions{}, dir), TestEnv());
    const std::string path = session.EndProfiling();
    session.Run({{"x", InputX(2)}});  // after the end: not recorded
    EXPECT_EQ(session.EndProfiling(), "");
    EXPECT_TRUE(Events(ReadProfile(path), "Session", "model_run").empty());
  }
  EXPECT_EQ(dir.Files().size(), 2u);  // the second session wrote once, under another name
}

TEST(ProfilerTest, ConcurrentRunsAreAllRecordedOnTheirThreads) {
  ScratchDir dir;
  const std::string model = MixedModel();
  Session session = MakeSession(model, Profiled(SessionOptions{}, dir), TestEnv());
  constexpr int kThreads = 4, kRuns = 5;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int r = 0; r < kRuns; ++r) session.Run({{"x", InputX(3)}});
    });
  for (std::thread& t : threads) t.join();
  const Profile profile = ReadProfile(session.EndProfiling());
  const std::vector<ProfileEvent> runs = Events(profile, "Session", "model_run");
  ASSERT_EQ(runs.size(), static_cast<size_t>(kThreads * kRuns));
  std::set<int64_t> run_threads;
  for (const ProfileEvent& r : runs) run_threads.insert(r.tid);
  EXPECT_EQ(run_threads.size(), static_cast<size_t>(kThreads));
  const std::vector<ProfileEvent> nodes = Events(profile, "Node");
  EXPECT_EQ(nodes.size(), kThreads * kRuns * StepNames(session).size());
  for (const ProfileEvent& n : nodes) {
    bool inside_own_thread_run = false;
    for (const ProfileEvent& r : runs) inside_own_thread_run = inside_own_thread_run || (r.tid == n.tid && Within(n, r));
    EXPECT_TRUE(inside_own_thread_run) << n.name;
  }
}

TEST(ProfilerTest, DeviceTimesOfTheSimulatedDeviceLieWithinTheRun) {
  ScratchDir dir;
  const std::string model = MixedModel();
  Session session = MakeSession(model, Profiled(OptionsFor("testing"), dir), TestEnv());
  session.Run({{"x", InputX(4)}});
  session.Run({{"x", InputX(4)}});
  const Profile profile = ReadProfile(session.EndProfiling());
  const std::vector<ProfileEvent> runs = Events(profile, "Session", "model_run");
  const std::vector<ProfileEvent> nodes = Events(profile, "Node");
  const std::vector<ProfileEvent> device = Events(profile, "Kernel");
  ASSERT_EQ(runs.size(), 2u);

  size_t testing_steps = 0;  // kernels on the device, and copies queued on its stream
  for (const ProfileEvent& n : nodes)
    if (n.provider() == kTestingEpName) ++testing_steps;
  ASSERT_GT(testing_steps, 0u);
  size_t testing_kernels = 0;
  for (const ProfileEvent& d : device) {
    if (d.provider() == kTestingEpName) ++testing_kernels;
    ASSERT_TRUE(profile.thread_names.count(d.tid)) << d.name;
    EXPECT_EQ(profile.thread_names.at(d.tid).rfind("TestingExecutionProvider stream", 0), 0u);
    EXPECT_NE(d.tid, runs[0].tid);
    EXPECT_TRUE(WithinSomeRun(d, runs)) << d.name << " at " << d.ts_us << " for " << d.dur_us;
    // The device began the step no earlier than the host finished the step before it (the host queues a step's
    // begin marker after that, and just before the step's own host event).
    const ProfileEvent* run = nullptr;
    for (const ProfileEvent& r : runs)
      if (Within(d, r)) run = &r;
    ASSERT_NE(run, nullptr);
    const ProfileEvent* host_step = nullptr;
    for (const ProfileEvent& n : nodes)
      if (n.name == d.name && Within(n, *run)) host_step = &n;
    ASSERT_NE(host_step, nullptr) << d.name;
    double previous_end = run->ts_us;
    for (const ProfileEvent& n : nodes)
      if (Within(n, *run) && n.ts_us < host_step->ts_us) previous_end = std::max(previous_end, n.ts_us + n.dur_us);
    EXPECT_GE(d.ts_us + 0.002, previous_end) << d.name;
  }
  EXPECT_EQ(testing_kernels, testing_steps);  // every device kernel step measured, in each run
  EXPECT_GT(device.size(), testing_kernels);  // copies to and from the device are timed too
}

TEST(ProfilerTest, DeviceTimesOfAsynchronousRunsAreResolvedAtTheEnd) {
  ScratchDir dir;
  const std::string model = MixedModel();
  Session session = MakeSession(model, Profiled(OptionsFor("testing"), dir), TestEnv());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", InputX(4));
  binding.BindOutput("y", MemoryInfo::Host());
  RunOptions async;
  async.synchronize = false;
  session.Run(binding, async);
  const Profile profile = ReadProfile(session.EndProfiling());
  EXPECT_FALSE(Events(profile, "Kernel").empty());
}

TEST(ProfilerTest, GraphCaptureRunsStayCorrectAndTimersStayOutOfTheCapture) {
  ScratchDir dir;
  const std::string model = GraphBuilder()
                                .Input("x", {2, 4})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Mul", {"r", "x"}, {"y"})
                                .Output("y")
                                .Serialize();
  SessionOptions options;
  options.AddProvider(kTestingEpName, {{"enable_graph_capture", "1"}});
  Session session = MakeSession(model, Profiled(options, dir), TestEnv());
  const EpDevice* device = session.InputEpDevice("x");
  ASSERT_NE(device, nullptr);
  AllocatorPtr allocator = device->factory->CreateAllocator(device->device_memory);
  Tensor host = Tensor::FromVector<float>({2, 4}, {-1, 2, -3, 4, 5, -6, 7, -8});
  Tensor input = Tensor::Allocate(DataType::kFloat, {2, 4}, allocator);
  TestEnv().CopyTensors({&host, 1}, {&input, 1}, nullptr);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("y", MemoryInfo::Host());
  for (int run = 0; run < 4; ++run) {  // warm-up, capture + replay, replay, replay
    session.Run(binding);
    EXPECT_EQ(binding.BoundOutputs()[0].tensor().ToVector<float>(),
              (std::vector<float>{0, 4, 0, 16, 25, 0, 49, 0}))
        << "run " << run;
  }
  const Profile profile = ReadProfile(session.EndProfiling());
  EXPECT_EQ(Events(profile, "Session", "model_run").size(), 4u);
  EXPECT_EQ(Events(profile, "Kernel").size(), 2u);  // the warm-up's two steps; captured steps are not timed
}

// ---- EP hooks --------------------------------------------------------------------------------------

// The CPU EP under another name, logging its run and step hooks.
class HookedEp : public CpuExecutionProvider {
 public:
  HookedEp(AllocatorPtr allocator, std::vector<std::string>* log) : CpuExecutionProvider(std::move(allocator)), log_(log) {}
  const std::string& type() const override { return type_; }
  uint32_t capability_flags() const override { return kEpRunHooks | kEpStepHooks; }
  void OnRunStart(Stream* /*stream*/, const std::string& tag) override { log_->push_back("run " + tag); }
  void OnRunEnd(Stream* /*stream*/) override { log_->push_back("end run"); }
  void OnStepBegin(const Node& node, Stream* /*stream*/) override { log_->push_back(node.op_type + " " + node.name); }
  void OnStepEnd(const Node& node, Stream* /*stream*/) override { log_->push_back("end " + node.name); }

 private:
  const std::string type_ = "HookedExecutionProvider";
  std::vector<std::string>* log_;
};

class HookedEpFactory : public EpFactory {
 public:
  explicit HookedEpFactory(std::vector<std::string>* log) : log_(log) {}
  std::string name() const override { return "HookedExecutionProvider"; }
  std::string vendor() const override { return "Tessera tests"; }
  std::string version() const override { return "1"; }
  std::vector<EpDevice> GetEpDevices(std::span<const HardwareDevice* const> devices) override {
    std::vector<EpDevice> out;
    for (const HardwareDevice* d : devices)
      if (d->type == DeviceType::kCpu) out.push_back({name(), vendor(), d, {}, {}, MemoryInfo::Host(), {}, this});
    return out;
  }
  std::unique_ptr<ExecutionProvider> CreateEp(const EpDevice&, const ProviderOptions&) override {
    return std::make_unique<HookedEp>(std::make_shared<Arena>(CreateHostAllocator(), ArenaOptions{}), log_);
  }
  AllocatorPtr CreateAllocator(const MemoryInfo&) override { return nullptr; }
  std::unique_ptr<DataTransfer> CreateDataTransfer() override { return nullptr; }
  std::unique_ptr<Stream> CreateStream(const MemoryInfo&) override { return nullptr; }

 private:
  std::vector<std::string>* log_;
};

TEST(ProfilerTest, StepHooksNestInsideRunHooksAlsoWhenAStepFails) {
  std::vector<std::string> log;
  Environment env;
  env.RegisterEpFactory("hooked", std::make_unique<HookedEpFactory>(&log));
  SessionOptions options;
  options.AddProvider("HookedExecutionProvider");
  options.optimization_level = OptimizationLevel::kNone;
  const std::string model = GraphBuilder()
                                .Input("x", {-1})
                                .Input("shape", {1}, /*int64*/ 7)
                                .Node("Relu", {"x"}, {"r"}, "relu")
                                .Node("Reshape", {"r", "shape"}, {"y"}, "reshape")
                                .Output("y")
                                .Serialize();
  Session session = MakeSession(model, options, env);
  RunOptions tagged;
  tagged.tag = "t1";
  const Tensor x = Tensor::FromVector<float>({4}, {1, -2, 3, -4});
  session.Run({{"x", x}, {"shape", Tensor::FromVector<int64_t>({1}, {4})}}, {}, tagged);
  EXPECT_EQ(log, (std::vector<std::string>{"run t1", "Relu relu", "end relu", "Reshape reshape", "end reshape",
                                           "end run"}));
  log.clear();
  EXPECT_THROW(session.Run({{"x", x}, {"shape", Tensor::FromVector<int64_t>({1}, {3})}}), Error);
  EXPECT_EQ(log, (std::vector<std::string>{"run ", "Relu relu", "end relu", "Reshape reshape", "end reshape",
                                           "end run"}));
}

// ---- reading profiles ------------------------------------------------------------------------------

TEST(ProfileReaderTest, ParsesJsonValuesAndEscapes) {
  const JsonValue v = ParseJson(R"( {"a": [1, -2.5e3, true, false, null], "s": "q\"\\\/\n\u00e9\ud83d\ude00", "o": {}} )");
  ASSERT_TRUE(v.is_object());
  const JsonValue* a = v.Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 5u);
  EXPECT_EQ(a->items[0].number, 1);
  EXPECT_EQ(a->items[1].number, -2500);
  EXPECT_TRUE(a->items[2].boolean);
  EXPECT_EQ(a->items[3].kind, JsonValue::Kind::kBool);
  EXPECT_FALSE(a->items[3].boolean);
  EXPECT_EQ(a->items[4].kind, JsonValue::Kind::kNull);
  EXPECT_EQ(v.StringOr("s"), "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(v.Find("o")->is_object());
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "\"\\x\"", "01x", "[1] 2", "\"a\nb\""})
    EXPECT_THROW(ParseJson(bad), Error) << bad;
}

TEST(ProfileReaderTest, JsonStringRoundTripsAnyText) {
  const std::string text = std::string("we\"ird\\name\t\x01\x1f/") + "\xc3\xa9";
  EXPECT_EQ(ParseJson(JsonString(text)).string, text);
}

TEST(ProfileReaderTest, MedianOfOddAndEvenCounts) {
  std::vector<double> odd = {5, 1, 3}, even = {4, 1, 3, 2}, none;
  EXPECT_DOUBLE_EQ(Median(odd), 3);
  EXPECT_DOUBLE_EQ(Median(even), 2.5);
  EXPECT_DOUBLE_EQ(Median(none), 0);
}

TEST(ProfileReaderTest, SummarizesPerOpTypeSlowestFirst) {
  const Profile profile = ParseProfile(R"({"traceEvents":[
    {"ph":"M","name":"thread_name","pid":1,"tid":9,"args":{"name":"gpu"}},
    {"ph":"X","cat":"Session","name":"model_run","pid":1,"tid":2,"ts":0,"dur":100,"args":{}},
    {"ph":"X","cat":"Node","name":"a","pid":1,"tid":2,"ts":1,"dur":10,"args":{"op_type":"Add","provider":"cpu"}},
    {"ph":"X","cat":"Node","name":"b","pid":1,"tid":2,"ts":20,"dur":30,"args":{"op_type":"Add","provider":"cpu"}},
    {"ph":"X","cat":"Node","name":"c","pid":1,"tid":2,"ts":60,"dur":5,"args":{"op_type":"Conv","provider":"gpu"}},
    {"ph":"X","cat":"Kernel","name":"c","pid":1,"tid":9,"ts":61,"dur":90,"args":{"op_type":"Conv","provider":"gpu"}}
  ]})");
  EXPECT_EQ(profile.thread_names.at(9), "gpu");
  const std::vector<OpTypeTotals> totals = SummarizeByOpType(profile);
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].op_type, "Conv");
  EXPECT_EQ(totals[0].count, 1);
  EXPECT_DOUBLE_EQ(totals[0].host_ms, 0.005);
  EXPECT_DOUBLE_EQ(totals[0].device_ms, 0.09);
  EXPECT_EQ(totals[1].op_type, "Add");
  EXPECT_EQ(totals[1].count, 2);
  EXPECT_DOUBLE_EQ(totals[1].host_ms, 0.04);
  EXPECT_DOUBLE_EQ(totals[1].device_ms, 0);
  EXPECT_DOUBLE_EQ(totals[0].median_host_us, 5);
  EXPECT_DOUBLE_EQ(totals[1].median_host_us, 20);  // of 10 and 30
  const std::vector<ProviderStepTimes> steps = MedianStepTimesByProvider(profile);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].provider, "cpu");
  EXPECT_EQ(steps[0].count, 2);
  EXPECT_DOUBLE_EQ(steps[0].median_host_us, 20);
  EXPECT_EQ(steps[1].provider, "gpu");
  EXPECT_DOUBLE_EQ(steps[1].median_host_us, 5);
  EXPECT_THROW(ParseProfile("{\"events\":[]}"), Error);
}

TEST(ProfileReaderTest, SelectsOneRunWithItsStepsAndTheSessionPhases) {
  const Profile profile = ParseProfile(R"({"traceEvents":[
    {"ph":"X","cat":"Session","name":"load","pid":1,"tid":2,"ts":0,"dur":5,"args":{}},
    {"ph":"X","cat":"Session","name":"model_run","pid":1,"tid":2,"ts":100,"dur":50,"args":{}},
    {"ph":"X","cat":"Node","name":"a","pid":1,"tid":2,"ts":101,"dur":40,"args":{"op_type":"Conv","provider":"gpu"}},
    {"ph":"X","cat":"Kernel","name":"a","pid":1,"tid":9,"ts":160,"dur":9,"args":{"op_type":"Conv","provider":"gpu"}},
    {"ph":"X","cat":"Session","name":"model_run","pid":1,"tid":2,"ts":200,"dur":10,"args":{}},
    {"ph":"X","cat":"Node","name":"a","pid":1,"tid":2,"ts":201,"dur":2,"args":{"op_type":"Conv","provider":"gpu"}}
  ]})");
  const Profile first = SelectRun(profile, 1);
  ASSERT_EQ(first.events.size(), 4u);  // load, the run, its step, and the kernel queued before the next run
  EXPECT_EQ(first.events[0].name, "load");
  std::vector<OpTypeTotals> totals = SummarizeByOpType(first);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_DOUBLE_EQ(totals[0].host_ms, 0.04);
  EXPECT_DOUBLE_EQ(totals[0].device_ms, 0.009);
  const Profile second = SelectRun(profile, 2);
  ASSERT_EQ(second.events.size(), 3u);
  totals = SummarizeByOpType(second);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_DOUBLE_EQ(totals[0].host_ms, 0.002);
  EXPECT_THROW(SelectRun(profile, 3), Error);
  EXPECT_THROW(SelectRun(profile, 0), Error);
}

}  // namespace
}  // namespace tessera::test
