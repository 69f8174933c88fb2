// Automatic graphs through the simulated device (provider option automatic_graphs = 1), whose streams record and
// replay queued work the way CUDA graphs do: Run(feeds) and IoBinding runs at any address are captured and
// replayed by the session, and no replay may read stale data (inputs changed in place or moved, new shapes,
// outputs held across runs, other sessions, concurrent runs).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <thread>

#include "core/logging.h"
#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

const EpDevice& TestingDevice() {
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == kTestingEpName) return *d;
  throw std::runtime_error("testing EP not registered");
}

SessionOptions AutomaticOptions(ProviderOptions extra = {}) {
  SessionOptions options;
  extra["automatic_graphs"] = "1";
  options.AddProvider(kTestingEpName, extra);
  return options;
}

// y = relu(x) * x + x, entirely on the simulated device; `rows` < 0 makes the first dimension symbolic (no
// preparation runs at creation).
std::string DeviceOnlyModel(int64_t rows = -1) {
  return GraphBuilder()
      .Input("x", {rows, 4})
      .Node("Relu", {"x"}, {"r"})
      .Node("Mul", {"r", "x"}, {"m"})
      .Node("Add", {"m", "x"}, {"y"})
      .Output("y")
      .Serialize();
}

// y = sigmoid(relu(x)): Relu on the simulated device, Sigmoid (it has no kernel there) on the CPU -- a plan that
// automatic graphs cannot hold.
std::string ModelWithACpuNode() {
  return GraphBuilder()
      .Input("x", {-1, 4})
      .Node("Relu", {"x"}, {"r"})
      .Node("Sigmoid", {"r"}, {"y"})
      .Output("y")
      .Serialize();
}

std::vector<float> Expected(const std::vector<float>& x) {
  std::vector<float> y;
  for (float v : x) y.push_back(std::max(v, 0.0f) * v + v);
  return y;
}

std::vector<float> Values(size_t count, float start) {
  std::vector<float> v;
  for (size_t i = 0; i < count; ++i) v.push_back(start + static_cast<float>(i) * (i % 2 ? -0.75f : 0.5f));
  return v;
}

Tensor HostTensor(const std::vector<float>& values) {
  return Tensor::FromVector<float>({static_cast<int64_t>(values.size() / 4), 4}, values);
}

class AutomaticGraphsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AllocatorPtr raw = TestingDevice().factory->CreateAllocator(TestingDevice().device_memory);
    device_ = std::make_shared<Arena>(raw, ArenaOptions{});
  }
  Tensor OnDevice(const std::vector<float>& values) {
    Tensor host = HostTensor(values);
    Tensor d = Tensor::Allocate(DataType::kFloat, host.shape(), device_);
    TestEnv().CopyTensors({&host, 1}, {&d, 1}, nullptr);
    return d;
  }
  void UpdateInPlace(Tensor& device_tensor, const std::vector<float>& values) {
    Tensor host = HostTensor(values);
    TestEnv().CopyTensors({&host, 1}, {&device_tensor, 1}, nullptr);
  }
  std::vector<float> Host(const Tensor& t) {
    if (t.memory_info().IsHostReadable()) return t.ToVector<float>();
    Tensor h = Tensor::Allocate(t.type(), t.shape());
    TestEnv().CopyTensors({&t, 1}, {&h, 1}, nullptr);
    return h.ToVector<float>();
  }
  AllocatorPtr device_;
};

TEST_F(AutomaticGraphsTest, RunFeedsIsCapturedOnTheSecondRunAndReplaysNewValues) {
  Session session = MakeSession(DeviceOnlyModel(), AutomaticOptions(), TestEnv());
  EXPECT_EQ(session.GraphStatus().rfind("automatic:", 0), 0u) << session.GraphStatus();
  for (int run = 0; run < 6; ++run) {  // warm-up, capture + replay, replays
    const std::vector<float> x = Values(8, -2.0f + static_cast<float>(run));
    const std::vector<Value> y = session.Run({{"x", Value(HostTensor(x))}});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_TRUE(y[0].tensor().memory_info().IsHostReadable());
    EXPECT_EQ(y[0].tensor().ToVector<float>(), Expected(x)) << "run " << run;
  }
  EXPECT_EQ(session.AutomaticGraphCaptures(), 1u);
  EXPECT_EQ(session.AutomaticGraphReplays(), 5u);
}

// Feeds and outputs of megabytes: the host copies into and out of the pinned blocks go over the pool in pieces.
TEST_F(AutomaticGraphsTest, LargeHostFeedsAndOutputsReplayExactly) {
  SessionOptions options = AutomaticOptions();
  options.intra_op_threads = 2;
  Session session = MakeSession(DeviceOnlyModel(), options, TestEnv());
  for (int run = 0; run < 4; ++run) {
    const std::vector<float> x = Values(4 * 100003, static_cast<float>(run) - 1.5f);  // 1.6 MB in, 1.6 MB out
    EXPECT_EQ(session.Run({{"x", Value(HostTensor(x))}})[0].tensor().ToVector<float>(), Expected(x)) << "run " << run;
  }
  EXPECT_EQ(session.AutomaticGraphCaptures(), 1u);
  EXPECT_EQ(session.AutomaticGraphReplays(), 3u);
}

// A decoder's shape: per layer an input read first there and an output written there and read by the next layer.
// Run(feeds) captures download each such output right after its step, on a side stream the capture joins and
// rejoins (session.automatic_graph_early_downloads, on by default), and upload the layers' inputs in pieces that
// the first step reading each waits for (session.automatic_graph_upload_pieces, default 3: x | past0 past1 | past2
// past3 here, 64 KiB each; 8: one piece per input): every replay returns this run's values, with the early downloads on and off,
// one, three and eight upload pieces, with and without the set's copy streams, on a slower device.
TEST_F(AutomaticGraphsTest, EarlyDownloadsOfLayerOutputsReplayExactly) {
  constexpr int kLayers = 4;
  constexpr size_t kElements = 4 * 4096;  // 64 KiB per input: the smallest upload piece
  // Values(16, start) repeated: the same small magnitudes in every 64-element block.
  const auto pattern = [](float start) {
    std::vector<float> v;
    while (v.size() < kElements) {
      const std::vector<float> block = Values(16, start);
      v.insert(v.end(), block.begin(), block.end());
    }
    return v;
  };
  GraphBuilder builder;
  builder.Input("x", {-1, 4});
  std::string h = "x";
  for (int i = 0; i < kLayers; ++i) {
    const std::string k = std::to_string(i);
    builder.Input("past" + k, {-1, 4})
        .Node("Mul", {h, "past" + k}, {"m" + k})
        .Node("Add", {"m" + k, "past" + k}, {"s" + k})
        .Node("Relu", {"s" + k}, {"present" + k})
        .Output("present" + k);
    h = "present" + k;
  }
  builder.Node("Mul", {h, h}, {"logits"}).Output("logits");
  const std::string model = builder.Serialize();
  for (const auto& [early, pieces] : std::vector<std::pair<const char*, const char*>>{
           {"1", "3"}, {"0", "3"}, {"1", "1"}, {"1", "8"}}) {
    for (const char* copy_streams : {"0", "1"}) {
      SessionOptions options = AutomaticOptions({{"copy_streams", copy_streams}, {"task_delay_us", "200"}});
      options.config["session.automatic_graph_early_downloads"] = early;
      options.config["session.automatic_graph_upload_pieces"] = pieces;
      Session session = MakeSession(model, options, TestEnv());
      const std::string where = std::string("early downloads ") + early + ", upload pieces " + pieces +
                                ", copy_streams " + copy_streams;
      for (int run = 0; run < 5; ++run) {
        const float r = static_cast<float>(run);
        Session::NamedValues feeds = {{"x", Value(HostTensor(pattern(r - 1.0f)))}};
        std::vector<float> state = pattern(r - 1.0f);
        std::vector<std::vector<float>> expected;
        for (int i = 0; i < kLayers; ++i) {
          const std::vector<float> past = pattern(0.5f * r - static_cast<float>(i));
          feeds.push_back({"past" + std::to_string(i), Value(HostTensor(past))});
          for (size_t e = 0; e < state.size(); ++e) state[e] = std::max(state[e] * past[e] + past[e], 0.0f);
          expected.push_back(state);
        }
        std::vector<float> logits;
        for (float v : state) logits.push_back(v * v);
        expected.push_back(logits);
        const std::vector<Value> y = session.Run(feeds);
        ASSERT_EQ(y.size(), expected.size()) << where;
        for (size_t k = 0; k < y.size(); ++k)
          EXPECT_EQ(y[k].tensor().ToVector<float>(), expected[k]) << where << ", run " << run << ", output " << k;
      }
      EXPECT_EQ(session.AutomaticGraphCaptures(), 1u) << where;
      EXPECT_EQ(session.AutomaticGraphReplays(), 4u) << where;
    }
  }
}

// Host feeds with no elements beside ones of 128 KiB or none: an empty input sits in a piece but waits for nothing
// (here: a b | c d with two pieces or more), and every replay returns this run's values with one, three and eight
// pieces.
TEST_F(AutomaticGraphsTest, EmptyHostFeedsReplayWithUploadPieces) {
  const std::string model = GraphBuilder()
                                .Input("a", {-1, 4})
                                .Input("b", {-1, 4})
                                .Input("c", {-1, 4})
                                .Input("d", {-1, 4})
                                .Node("Relu", {"a"}, {"ra"})
                                .Node("Relu", {"b"}, {"rb"})
                                .Node("Relu", {"c"}, {"rc"})
                                .Node("Relu", {"d"}, {"rd"})
                                .Output("ra")
                                .Output("rb")
                                .Output("rc")
                                .Output("rd")
                                .Serialize();
  for (const char* pieces : {"1", "3", "8"}) {
    for (const int rows : {0, 8192}) {
      SessionOptions options = AutomaticOptions({{"task_delay_us", "100"}});
      options.config["session.automatic_graph_upload_pieces"] = pieces;
      Session session = MakeSession(model, options, TestEnv());
      const std::string where = std::string("upload pieces ") + pieces + ", rows " + std::to_string(rows);
      for (int run = 0; run < 4; ++run) {
        const std::vector<float> b = Values(4 * rows, static_cast<float>(run) - 1.0f);
        const std::vector<float> d = Values(4 * rows, static_cast<float>(run) + 0.25f);
        const std::vector<Value> y = session.Run({{"a", Value(HostTensor({}))},
                                                  {"b", Value(HostTensor(b))},
                                                  {"c", Value(HostTensor({}))},
                                                  {"d", Value(HostTensor(d))}});
        ASSERT_EQ(y.size(), 4u) << where;
        EXPECT_EQ(y[0].tensor().NumElements(), 0) << where;
        EXPECT_EQ(y[2].tensor().NumElements(), 0) << where;
        for (const auto& [k, in] : std::vector<std::pair<size_t, const std::vector<float>*>>{{1, &b}, {3, &d}}) {
          std::vector<float> expected;
          for (float v : *in) expected.push_back(std::max(v, 0.0f));
          EXPECT_EQ(y[k].tensor().ToVector<float>(), expected) << where << ", run " << run << ", output " << k;
        }
      }
    }
  }
}

// Several inputs read at different depths, one never read (a model's unused input must not keep it eager), one read
// by two steps; outputs written at different depths, one by a Reshape, one an input fed through unchanged: every
// replay returns this run's values, with and without copy streams.
TEST_F(AutomaticGraphsTest, ManyInputsAndOutputsAndAnUnusedInputReplayExactly) {
  const std::string model = GraphBuilder()
                                .Input("a", {-1, 4})
                                .Input("b", {-1, 4})
                                .Input("unused", {-1, 4})
                                .Input("c", {-1, 4})
                                .Node("Relu", {"a"}, {"r"})
                                .Node("Mul", {"r", "a"}, {"first"})
                                .Node("Add", {"first", "b"}, {"s"})
                                .Node("Relu", {"s"}, {"second"})
                                .Node("Add", {"second", "c"}, {"third"})
                                .Node("Mul", {"third", "b"}, {"fourth"})
                                .Node("Shape", {"fourth"}, {"shape"})
                                .Node("Reshape", {"fourth", "shape"}, {"reshaped"})
                                .Output("first")
                                .Output("third")
                                .Output("reshaped")
                                .Output("c")
                                .Serialize();
  for (const char* copy_streams : {"1", "0"}) {
    SessionOptions options = AutomaticOptions({{"copy_streams", copy_streams}});
    Session session = MakeSession(model, options, TestEnv());
    EXPECT_EQ(session.GraphStatus().rfind("automatic:", 0), 0u) << session.GraphStatus();
    for (int run = 0; run < 5; ++run) {
      const float k = static_cast<float>(run);
      const std::vector<float> a = Values(12, k - 2.0f), b = Values(12, 0.25f * k), c = Values(12, 1.0f - k),
                               unused = Values(12, 100.0f + k);
      const std::vector<Value> y = session.Run({{"a", Value(HostTensor(a))},
                                                {"b", Value(HostTensor(b))},
                                                {"unused", Value(HostTensor(unused))},
                                                {"c", Value(HostTensor(c))}});
      ASSERT_EQ(y.size(), 4u);
      std::vector<float> first, third, fourth;
      for (size_t i = 0; i < a.size(); ++i) {
        first.push_back(std::max(a[i], 0.0f) * a[i]);
        third.push_back(std::max(first[i] + b[i], 0.0f) + c[i]);
        fourth.push_back(third[i] * b[i]);
      }
      const std::string where = std::string("copy_streams ") + copy_streams + ", run " + std::to_string(run);
      EXPECT_EQ(y[0].tensor().ToVector<float>(), first) << where;
      EXPECT_EQ(y[1].tensor().ToVector<float>(), third) << where;
      EXPECT_EQ(y[2].tensor().ToVector<float>(), fourth) << where;
      EXPECT_EQ(y[3].tensor().ToVector<float>(), c) << where;
    }
    EXPECT_EQ(session.AutomaticGraphCaptures(), 1u) << copy_streams;
    EXPECT_EQ(session.AutomaticGraphReplays(), 4u) << copy_streams;
  }
}

// Static shapes: the preparation runs at creation warm up, capture and replay, so the caller's first Run replays.
TEST_F(AutomaticGraphsTest, PreparedSessionsReplayFromTheFirstRun) {
  Session session = MakeSession(DeviceOnlyModel(2), AutomaticOptions(), TestEnv());
  EXPECT_EQ(session.AutomaticGraphCaptures(), 1u);
  const size_t replays = session.AutomaticGraphReplays();
  EXPECT_GE(replays, 1u);
  const std::vector<float> x = Values(8, 3.0f);
  EXPECT_EQ(session.Run({{"x", Value(HostTensor(x))}})[0].tensor().ToVector<float>(), Expected(x));
  EXPECT_EQ(session.AutomaticGraphReplays(), replays + 1);
  EXPECT_EQ(session.AutomaticGraphCaptures(), 1u);
}

// Outputs come out of the graph's buffers by copy: what a caller holds does not change with later replays.
TEST_F(AutomaticGraphsTest, OutputsHeldAcrossRunsKeepTheirValues) {
  Session session = MakeSession(DeviceOnlyModel(), AutomaticOptions(), TestEnv());
  std::vector<std::vector<float>> inputs;
  std::vector<Value> held;
  IoBinding binding = session.CreateIoBinding();
  binding.BindOutput("y", TestingDevice().device_memory);
  std::vector<Tensor> held_device;
  for (int run = 0; run < 5; ++run) {
    inputs.push_back(Values(8, static_cast<float>(run) - 1.5f));
    held.push_back(session.Run({{"x", Value(HostTensor(inputs.back()))}})[0]);
    binding.BindInput("x", OnDevice(inputs.back()));
    session.Run(binding);
    held_device.push_back(binding.BoundOutputs()[0].tensor());
    EXPECT_EQ(held_device.back().memory_info(), TestingDevice().device_memory);
  }
  for (size_t run = 0; run < inputs.size(); ++run) {
    EXPECT_EQ(held[run].tensor().ToVector<float>(), Expected(inputs[run])) << "Run(feeds) output of run " << run;
    EXPECT_EQ(Host(held_device[run]), Expected(inputs[run])) << "IoBinding output of run " << run;
  }
  EXPECT_EQ(session.AutomaticGraphCaptures(), 2u);  // one graph for host outputs, one for device outputs
}

// An IoBinding input updated in place, then another buffer bound: every run copies the current contents in.
TEST_F(AutomaticGraphsTest, BoundInputsUpdatedInPlaceOrMovedAreReadEveryRun) {
  Session session = MakeSession(DeviceOnlyModel(), AutomaticOptions(), TestEnv());
  std::vector<float> x = Values(8, 1.0f);
  Tensor input = OnDevice(x);
  Tensor output = Tensor::Allocate(DataType::kFloat, {2, 4}, device_);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("y", output);
  for (int run = 0; run < 4; ++run) {
    for (float& v : x) v -= 0.75f;
    UpdateInPlace(input, x);
    session.Run(binding);
    EXPECT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), output.raw_data());
    EXPECT_EQ(Host(output), Expected(x)) << "in place, run " << run;
  }
  for (int run = 0; run < 3; ++run) {
    x = Values(8, static_cast<float>(run) * 2.0f - 3.0f);
    binding.BindInput("x", OnDevice(x));  // a new address each run
    session.Run(binding);
    EXPECT_EQ(Host(output), Expected(x)) << "moved, run " << run;
  }
  EXPECT_EQ(session.AutomaticGraphCaptures(), 1u);
  // Host memory bound as the input: another signature (fed from the host), its own graph.
  for (int run = 0; run < 3; ++run) {
    x = Values(8, static_cast<float>(run) + 0.25f);
    binding.BindInput("x", HostTensor(x));
    session.Run(binding);
    EXPECT_EQ(Host(output), Expected(x)) << "host input, run " << run;
  }
  EXPECT_EQ(session.AutomaticGraphCaptures(), 2u);
}

// Each input shape gets its own graph; past the limit the least recently used one is released and captured again
// when its shape comes back.
TEST_F(AutomaticGraphsTest, NewShapesGetTheirOwnGraphsAndTheLimitReleasesTheOldest) {
  Session session = MakeSession(DeviceOnlyModel(), AutomaticOptions({{"automatic_graph_limit", "2"}}), TestEnv());
  size_t expected_captures = 0;
  for (int64_t rows : {1, 2, 3, 1, 3}) {
    const bool seen = expected_captures >= 3;  // shapes 1 and 3 come back: warm already, captured at once
    for (int run = 0; run < 3; ++run) {
      const std::vector<float> x = Values(static_cast<size_t>(rows) * 4, static_cast<float>(run + rows) - 2.5f);
      const Tensor y = session.Run({{"x", Value(HostTensor(x))}})[0].tensor();
      EXPECT_EQ(y.shape(), Shape({rows, 4}));
      EXPECT_EQ(y.ToVector<float>(), Expected(x)) << rows << " rows, run " << run;
    }
    if (!seen || rows == 1) ++expected_captures;  // 3 is still held when it comes back (limit 2: {1, 3})
    EXPECT_EQ(session.AutomaticGraphCaptures(), expected_captures) << "after " << rows << " rows";
  }
}

TEST_F(AutomaticGraphsTest, ConcurrentRunsEachReplayTheirOwnGraphs) {
  Session session = MakeSession(DeviceOnlyModel(), AutomaticOptions(), TestEnv());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 25; ++run) {
        const std::vector<float> x = Values(8, static_cast<float>(t * 100 + run));
        if (run % 2 == 0) {
          if (session.Run({{"x", Value(HostTensor(x))}})[0].tensor().ToVector<float>() != Expected(x)) ++wrong;
        } else {
          IoBinding binding = session.CreateIoBinding();
          binding.BindInput("x", OnDevice(x));
          binding.BindOutput("y", MemoryInfo::Host());
          session.Run(binding);
          if (binding.BoundOutputs()[0].tensor().ToVector<float>() != Expected(x)) ++wrong;
        }
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(session.AutomaticGraphReplays(), 50u);
}

// Two sessions of different models on one device, runs interleaved: each replays its own buffers.
TEST_F(AutomaticGraphsTest, SessionsInterleavedKeepTheirOwnBuffers) {
  const std::string doubled = GraphBuilder()
                                  .Input("x", {-1, 4})
                                  .Node("Add", {"x", "x"}, {"y"})
                                  .Output("y")
                                  .Serialize();
  Session a = MakeSession(DeviceOnlyModel(), AutomaticOptions(), TestEnv());
  Session b = MakeSession(doubled, AutomaticOptions(), TestEnv());
  for (int run = 0; run < 5; ++run) {
    const std::vector<float> x = Values(8, static_cast<float>(run) - 2.0f);
    const std::vector<float> ya = a.Run({{"x", Value(HostTensor(x))}})[0].tensor().ToVector<float>();
    const std::vector<float> yb = b.Run({{"x", Value(HostTensor(x))}})[0].tensor().ToVector<float>();
    EXPECT_EQ(ya, Expected(x)) << "run " << run;
    std::vector<float> twice;
    for (float v : x) twice.push_back(v + v);
    EXPECT_EQ(yb, twice) << "run " << run;
  }
  EXPECT_EQ(a.AutomaticGraphCaptures(), 1u);
  EXPECT_EQ(b.AutomaticGraphCaptures(), 1u);
}

// Shape arithmetic on the host (Shape -> Gather -> Reshape) is baked into each shape's graph.
TEST_F(AutomaticGraphsTest, HostShapeArithmeticIsCapturedPerShape) {
  const std::string model = GraphBuilder()
                                .Input("x", {-1, 4})
                                .Int64Initializer("order", {2}, {1, 0})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Shape", {"r"}, {"s"})
                                .Node("Gather", {"s", "order"}, {"swapped"})
                                .Node("Reshape", {"r", "swapped"}, {"t"})
                                .Node("Add", {"t", "t"}, {"y"})
                                .Output("y")
                                .Output("s", 7)
                                .Serialize();
  Session session = MakeSession(model, AutomaticOptions(), TestEnv());
  EXPECT_EQ(session.GraphStatus().rfind("automatic:", 0), 0u) << session.GraphStatus();
  for (int64_t rows : {2, 3, 2}) {
    for (int run = 0; run < 3; ++run) {
      const std::vector<float> x = Values(static_cast<size_t>(rows) * 4, static_cast<float>(run) - 1.0f);
      const std::vector<Value> out = session.Run({{"x", Value(HostTensor(x))}});
      EXPECT_EQ(out[0].tensor().shape(), Shape({4, rows}));
      std::vector<float> expected;
      for (float v : x) expected.push_back(2 * std::max(v, 0.0f));
      EXPECT_EQ(out[0].tensor().ToVector<float>(), expected) << rows << " rows, run " << run;
      EXPECT_EQ(out[1].tensor().ToVector<int64_t>(), (std::vector<int64_t>{rows, 4}));
    }
  }
  EXPECT_EQ(session.AutomaticGraphCaptures(), 2u);
}

// A value computed on the host from shapes alone and read as data on the device (torch exports: position ids,
// sequence lengths) is copied once, when the graph of its input shapes is captured, into a buffer the graph keeps:
// such models are captured too, and each shape replays its own value.
TEST_F(AutomaticGraphsTest, ValuesComputedFromShapesAndReadOnTheDeviceAreCapturedPerShape) {
  const std::string model = GraphBuilder()
                                .Input("x", {-1, 2})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Shape", {"r"}, {"s"})
                                .Node("Cast", {"s"}, {"sf"})  // on the CPU: its result is copied to the device
                                .IntAttribute("to", 1)
                                .Node("Add", {"r", "sf"}, {"y"})
                                .Output("y")
                                .Serialize();
  Session session = MakeSession(model, AutomaticOptions(), TestEnv());
  EXPECT_EQ(session.GraphStatus().rfind("automatic:", 0), 0u) << session.GraphStatus();
  for (int64_t rows : {2, 3, 2, 5}) {
    for (int run = 0; run < 3; ++run) {
      const std::vector<float> x = Values(static_cast<size_t>(rows) * 2, static_cast<float>(run) - 1.5f);
      const std::vector<float> y =
          session.Run({{"x", Value(Tensor::FromVector<float>({rows, 2}, x))}})[0].tensor().ToVector<float>();
      ASSERT_EQ(y.size(), x.size());
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_EQ(y[i], std::max(x[i], 0.0f) + (i % 2 == 0 ? static_cast<float>(rows) : 2.0f))
            << rows << " rows, run " << run << ", element " << i;
    }
  }
  EXPECT_EQ(session.AutomaticGraphCaptures(), 3u);
}

TEST_F(AutomaticGraphsTest, ModelsAGraphCannotHoldRunEagerlyAndSayWhy) {
  const std::string with_cpu_node = ModelWithACpuNode();
  Session session = MakeSession(with_cpu_node, AutomaticOptions(), TestEnv());
  EXPECT_EQ(session.GraphStatus().rfind("eager:", 0), 0u) << session.GraphStatus();
  EXPECT_NE(session.GraphStatus().find("another execution provider"), std::string::npos) << session.GraphStatus();
  for (int run = 0; run < 3; ++run) {
    const std::vector<float> x = Values(8, static_cast<float>(run));
    const std::vector<float> y = session.Run({{"x", Value(HostTensor(x))}})[0].tensor().ToVector<float>();
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], 1.0f / (1.0f + std::exp(-std::max(x[i], 0.0f))), 1e-6f);
  }
  EXPECT_EQ(session.AutomaticGraphCaptures(), 0u);

  SessionOptions profiled = AutomaticOptions();
  profiled.enable_profiling = true;
  profiled.profile_file_prefix = (std::filesystem::temp_directory_path() / "automatic_graphs_profile").string();
  Session traced = MakeSession(DeviceOnlyModel(), profiled, TestEnv());
  EXPECT_NE(traced.GraphStatus().find("profiling"), std::string::npos) << traced.GraphStatus();
  std::filesystem::remove(traced.EndProfiling());

  SessionOptions off;
  off.AddProvider(kTestingEpName);
  EXPECT_EQ(MakeSession(DeviceOnlyModel(), off, TestEnv()).GraphStatus().rfind("eager:", 0), 0u);
  EXPECT_THROW(MakeSession(DeviceOnlyModel(), AutomaticOptions({{"automatic_graph_limit", "0"}}), TestEnv()), Error);
  for (const char* pieces : {"0", "9", "two", ""}) {
    SessionOptions bad = AutomaticOptions();
    bad.config["session.automatic_graph_upload_pieces"] = pieces;
    try {
      MakeSession(DeviceOnlyModel(), bad, TestEnv());
      ADD_FAILURE() << "upload pieces '" << pieces << "' accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("session.automatic_graph_upload_pieces"), std::string::npos) << e.what();
    }
  }
}

// The EP learns at creation, before any run, whether the session replays its runs (ExecutionProvider::
// SetRunsReplayed): kernels with a host-cheap and a device-fast implementation choose by it (the CUDA EP's Conv).
TEST_F(AutomaticGraphsTest, TheProviderIsToldWhetherRunsAreReplayed) {
  const LogLevel saved = LogThreshold();
  const auto told = [](const std::string& model, SessionOptions options) {
    options.log_level = LogLevel::kVerbose;
    ::testing::internal::CaptureStderr();
    std::string status;
    try {
      status = MakeSession(model, options, TestEnv()).GraphStatus();
    } catch (...) {
      ::testing::internal::GetCapturedStderr();
      throw;
    }
    const std::string log = ::testing::internal::GetCapturedStderr();
    const bool replayed = log.find("runs are replayed as whole-run graphs") != std::string::npos;
    const bool eager = log.find("runs execute the kernels") != std::string::npos;
    EXPECT_NE(replayed, eager) << "told exactly once: " << log;
    return std::make_pair(replayed, status);
  };
  EXPECT_EQ(told(DeviceOnlyModel(), AutomaticOptions()), std::make_pair(true, std::string(
      "automatic: Run(feeds) and IoBinding runs are captured and replayed on ") + kTestingEpName));
  // Automatic graphs enabled, but the plan cannot be captured (a CPU node between device nodes), or off.
  const std::string with_cpu_node = ModelWithACpuNode();
  EXPECT_FALSE(told(with_cpu_node, AutomaticOptions()).first);
  SessionOptions off;
  off.AddProvider(kTestingEpName);
  EXPECT_FALSE(told(DeviceOnlyModel(), off).first);
  // Explicit capture (IoBinding runs per gpu_graph_id) replays too.
  SessionOptions explicit_capture;
  explicit_capture.AddProvider(kTestingEpName, {{"enable_graph_capture", "1"}});
  EXPECT_TRUE(told(DeviceOnlyModel(4), explicit_capture).first);
  SetLogThreshold(saved);
}

// The EP is told once, when the session's creation ends (ExecutionProvider::OnSessionReady): after it learned how
// runs go and after the preparation runs, before the first run of the caller's.
TEST_F(AutomaticGraphsTest, TheProviderIsToldWhenTheSessionIsReady) {
  const LogLevel saved = LogThreshold();
  SessionOptions options = AutomaticOptions();
  options.log_level = LogLevel::kVerbose;
  ::testing::internal::CaptureStderr();
  std::string log;
  try {
    Session session = MakeSession(DeviceOnlyModel(), options, TestEnv());
    log = ::testing::internal::GetCapturedStderr();
    ::testing::internal::CaptureStderr();
    session.Run({{"x", Value(HostTensor(Values(8, 1.0f)))}});
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    SetLogThreshold(saved);
    throw;
  }
  const std::string run_log = ::testing::internal::GetCapturedStderr();
  SetLogThreshold(saved);
  const std::string ready = "the session is ready";
  const size_t at = log.find(ready);
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find(ready, at + 1), std::string::npos) << "told once: " << log;
  EXPECT_LT(log.find("runs are replayed as whole-run graphs"), at) << log;
  // Between the creation's "plan" and "prepare" phases (the latter ends with the preparation runs, if any).
  EXPECT_LT(log.find("session creation: plan"), at) << log;
  const size_t prepared = log.find("session creation: prepare");
  ASSERT_NE(prepared, std::string::npos) << log;
  EXPECT_LT(at, prepared) << log;
  EXPECT_EQ(run_log.find(ready), std::string::npos) << run_log;
}

// RunOptions gpu_graph_id = -1 runs eagerly; a terminate flag stops a replay before it starts, and the session
// goes on.
TEST_F(AutomaticGraphsTest, RunOptionsOptOutAndTerminate) {
  Session session = MakeSession(DeviceOnlyModel(), AutomaticOptions(), TestEnv());
  for (int run = 0; run < 3; ++run) session.Run({{"x", Value(HostTensor(Values(8, 1.0f)))}});
  const size_t replays = session.AutomaticGraphReplays();
  RunOptions eager;
  eager.config["gpu_graph_id"] = "-1";
  const std::vector<float> x = Values(8, -4.0f);
  EXPECT_EQ(session.Run({{"x", Value(HostTensor(x))}}, {}, eager)[0].tensor().ToVector<float>(), Expected(x));
  EXPECT_EQ(session.AutomaticGraphReplays(), replays);
  RunOptions stop;
  stop.terminate = true;
  try {
    session.Run({{"x", Value(HostTensor(x))}}, {}, stop);
    ADD_FAILURE() << "a terminated run must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTerminated);
  }
  EXPECT_EQ(session.Run({{"x", Value(HostTensor(x))}})[0].tensor().ToVector<float>(), Expected(x));
  EXPECT_EQ(session.AutomaticGraphReplays(), replays + 1);
}

}  // namespace
}  // namespace tessera::test
