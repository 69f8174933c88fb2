// Graph capture through the simulated device, whose streams record and replay queued work the way
// CUDA graphs do: the session must keep every buffer alive, replay instead of re-running, insist on
// fixed input addresses, and reject models that cannot be captured.
#include <gtest/gtest.h>

#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

const EpDevice& TestingDevice() {
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == kTestingEpName) return *d;
  throw std::runtime_error("testing EP not registered");
}

SessionOptions CaptureOptions() {
  SessionOptions options;
  options.AddProvider(kTestingEpName, {{"enable_graph_capture", "1"}});
  return options;
}

// y = relu(x) * x + x, entirely on the simulated device.
std::string DeviceOnlyModel() {
  return GraphBuilder()
      .Input("x", {2, 4})
      .Node("Relu", {"x"}, {"r"})
      .Node("Mul", {"r", "x"}, {"m"})
      .Node("Add", {"m", "x"}, {"y"})
      .Output("y")
      .Serialize();
}

std::vector<float> Expected(const std::vector<float>& x) {
  std::vector<float> y;
  for (float v : x) y.push_back(std::max(v, 0.0f) * v + v);
  return y;
}

class GraphCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AllocatorPtr raw = TestingDevice().factory->CreateAllocator(TestingDevice().device_memory);
    device_ = std::make_shared<Arena>(raw, ArenaOptions{});
  }
  Tensor OnDevice(const std::vector<float>& values) {
    Tensor host = Tensor::FromVector<float>({2, 4}, values);
    Tensor d = Tensor::Allocate(DataType::kFloat, {2, 4}, device_);
    TestEnv().CopyTensors({&host, 1}, {&d, 1}, nullptr);
    return d;
  }
  void UpdateInPlace(Tensor& device_tensor, const std::vector<float>& values) {
    Tensor host = Tensor::FromVector<float>({2, 4}, values);
    TestEnv().CopyTensors({&host, 1}, {&device_tensor, 1}, nullptr);
  }
  std::vector<float> Host(const Tensor& t) {
    Tensor h = Tensor::Allocate(t.type(), t.shape());
    TestEnv().CopyTensors({&t, 1}, {&h, 1}, nullptr);
    return h.ToVector<float>();
  }
  AllocatorPtr device_;
};

TEST_F(GraphCaptureTest, CapturesAfterWarmUpAndReplaysWithInPlaceInputUpdates) {
  const std::string model = DeviceOnlyModel();
  Session session = MakeSession(model, CaptureOptions(), TestEnv());
  std::vector<float> x = {-1, 2, -3, 4, 5, -6, 7, -8};
  Tensor input = OnDevice(x);
  Tensor output = Tensor::Allocate(DataType::kFloat, {2, 4}, device_);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("y", output);
  for (int run = 0; run < 4; ++run) {  // warm-up, capture + replay, replay, replay
    for (float& v : x) v += 0.5f;
    UpdateInPlace(input, x);
    session.Run(binding);
    EXPECT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), output.raw_data());
    EXPECT_EQ(Host(output), Expected(x)) << "run " << run;
  }
}

TEST_F(GraphCaptureTest, SeveralGraphsByKeyAndRunsWithoutAGraph) {
  const std::string model = DeviceOnlyModel();
  Session session = MakeSession(model, CaptureOptions(), TestEnv());
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8}, b = {-1, -2, -3, -4, 5, 6, 7, 8};
  Tensor in_a = OnDevice(a), in_b = OnDevice(b);
  IoBinding binding_a = session.CreateIoBinding(), binding_b = session.CreateIoBinding();
  binding_a.BindInput("x", in_a);
  binding_a.BindOutput("y", TestingDevice().device_memory);
  binding_b.BindInput("x", in_b);
  binding_b.BindOutput("y", MemoryInfo::Host());
  RunOptions key1, key2, no_graph;
  key1.config["gpu_graph_id"] = "1";
  key2.config["gpu_graph_id"] = "2";
  no_graph.config["gpu_graph_id"] = "-1";
  for (int run = 0; run < 3; ++run) {
    session.Run(binding_a, key1);
    session.Run(binding_b, key2);
    EXPECT_EQ(Host(binding_a.BoundOutputs()[0].tensor()), Expected(a));
    EXPECT_EQ(binding_b.BoundOutputs()[0].tensor().ToVector<float>(), Expected(b));
  }
  IoBinding other = session.CreateIoBinding();
  other.BindInput("x", OnDevice(a));
  other.BindOutput("y", MemoryInfo::Host());
  session.Run(other, no_graph);
  EXPECT_EQ(other.BoundOutputs()[0].tensor().ToVector<float>(), Expected(a));
}

TEST_F(GraphCaptureTest, MovedInputsAreRejectedAfterCapture) {
  const std::string model = DeviceOnlyModel();
  Session session = MakeSession(model, CaptureOptions(), TestEnv());
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", OnDevice(x));
  binding.BindOutput("y", MemoryInfo::Host());
  session.Run(binding);
  session.Run(binding);  // captured now
  binding.BindInput("x", OnDevice(x));  // a new buffer
  try {
    session.Run(binding);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
}

TEST_F(GraphCaptureTest, HostInputsAreRejectedAtCapture) {
  const std::string model = DeviceOnlyModel();
  Session session = MakeSession(model, CaptureOptions(), TestEnv());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", Tensor::FromVector<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  binding.BindOutput("y", MemoryInfo::Host());
  session.Run(binding);  // warm-up copies the host input: fine
  EXPECT_THROW(session.Run(binding), Error);
  // Plain Run(feeds) never captures and keeps working.
  auto out = session.Run({{"x", Tensor::FromVector<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}});
  EXPECT_EQ(out[0].tensor().ToVector<float>(), Expected({1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST_F(GraphCaptureTest, ModelsWithCpuNodesCannotBeCaptured) {
  const std::string model = GraphBuilder()
                                .Input("x", {2, 4})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Sigmoid", {"r"}, {"y"})
                                .Output("y")
                                .Serialize();
  try {
    MakeSession(model, CaptureOptions(), TestEnv());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotImplemented);
    EXPECT_NE(std::string(e.what()).find("cannot be captured"), std::string::npos) << e.what();
  }
}

// Shape arithmetic on the host (exporters write Shape -> Gather -> ... -> Reshape) does not prevent
// capture: those CPU nodes read only Shape's host output and constants, so their results are the same on
// every replay (replays require the captured input shapes).
TEST_F(GraphCaptureTest, HostShapeArithmeticIsCapturedWithTheGraph) {
  // A symbolic first dim: with a static one, the session knows r's shape and folds Shape -> Gather away.
  const std::string model = GraphBuilder()
                                .Input("x", {-1, 4})
                                .Int64Initializer("order", {2}, {1, 0})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Shape", {"r"}, {"s"})
                                .Node("Gather", {"s", "order"}, {"swapped"})
                                .Node("Reshape", {"r", "swapped"}, {"t"})
                                .Node("Add", {"t", "t"}, {"y"})
                                .Output("y")
                                .Serialize();
  Session session = MakeSession(model, CaptureOptions(), TestEnv());
  bool gather_on_cpu = false;
  for (const PartitionEntry& e : session.Partition()) {
    EXPECT_FALSE(e.is_copy && e.copy_from.rfind("feed", 0) != 0) << e.copy_from << " -> " << e.copy_to;
    if (e.op_type == "Gather") gather_on_cpu = e.ep == "CPUExecutionProvider";
  }
  EXPECT_TRUE(gather_on_cpu);
  std::vector<float> x = {-1, 2, -3, 4, 5, -6, 7, -8};
  Tensor input = OnDevice(x);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("y", TestingDevice().device_memory);
  for (int run = 0; run < 4; ++run) {  // warm-up, capture + replay, replay, replay
    for (float& v : x) v -= 1.5f;
    UpdateInPlace(input, x);
    session.Run(binding);
    const Tensor& y = binding.BoundOutputs()[0].tensor();
    EXPECT_EQ(y.shape(), Shape({4, 2}));
    std::vector<float> expected;
    for (float v : x) expected.push_back(2 * std::max(v, 0.0f));
    EXPECT_EQ(Host(y), expected) << "run " << run;
  }
}

// A host node reading data that can change between replays (here an int64 graph input) is rejected.
TEST_F(GraphCaptureTest, HostNodesReadingInputDataCannotBeCaptured) {
  const std::string model = GraphBuilder()
                                .Input("x", {2, 4})
                                .Input("order", {2}, 7)
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Shape", {"r"}, {"s"})
                                .Node("Gather", {"s", "order"}, {"swapped"})
                                .Node("Reshape", {"r", "swapped"}, {"y"})
                                .Output("y")
                                .Serialize();
  try {
    MakeSession(model, CaptureOptions(), TestEnv());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotImplemented);
    EXPECT_NE(std::string(e.what()).find("not computed from shapes alone"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::test
