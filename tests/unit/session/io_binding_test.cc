#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// y = relu(x) * x + x on the simulated device; z = Sigmoid(x) on the CPU (a second output).
std::string DeviceModel() {
  return GraphBuilder()
      .Input("x", {-1, 8})
      .Node("Relu", {"x"}, {"r"})
      .Node("Mul", {"r", "x"}, {"m"})
      .Node("Add", {"m", "x"}, {"y"})
      .Node("Sigmoid", {"x"}, {"z"})
      .Output("y")
      .Output("z")
      .Serialize();
}

const EpDevice& TestingDevice() {
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == kTestingEpName) return *d;
  throw std::runtime_error("testing EP not registered");
}

AllocatorPtr DeviceAllocator() {
  static AllocatorPtr allocator = [] {
    ArenaOptions arena;
    return TestEnv().CreateSharedAllocator(TestingDevice(), MemoryType::kDefault, &arena);
  }();
  return allocator;
}

Tensor ToDevice(const Tensor& host) {
  Tensor d = Tensor::Allocate(host.type(), host.shape(), DeviceAllocator());
  TestEnv().CopyTensors({&host, 1}, {&d, 1}, nullptr);
  return d;
}

Tensor ToHost(const Tensor& device) {
  Tensor h = Tensor::Allocate(device.type(), device.shape());
  TestEnv().CopyTensors({&device, 1}, {&h, 1}, nullptr);
  return h;
}

Tensor Ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n) * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * (static_cast<float>(i % 13) - 6.0f);
  return Tensor::FromVector<float>({n, 8}, v);
}

std::vector<float> ExpectedY(const Tensor& x) {
  std::vector<float> y;
  for (float v : x.Span<float>()) y.push_back(std::max(v, 0.0f) * v + v);
  return y;
}

TEST(IoBindingTest, InputsOnDeviceOutputsBoundToDeviceMemory) {
  const std::string model = DeviceModel();
  Session session = MakeSession(model, OptionsFor("testing"), TestEnv());
  const MemoryInfo device = TestingDevice().device_memory;
  ASSERT_EQ(session.InputMemoryInfo("x"), device);
  Tensor host_x = Ramp(3, 0.5f);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", ToDevice(host_x));
  binding.BindOutput("y", device);
  binding.BindOutput("z", MemoryInfo::Host());
  session.Run(binding);
  ASSERT_EQ(binding.BoundOutputs().size(), 2u);
  const Tensor& y = binding.BoundOutputs()[0].tensor();
  EXPECT_EQ(y.memory_info(), device);
  EXPECT_EQ(y.shape(), (Shape{3, 8}));
  EXPECT_EQ(ToHost(y).ToVector<float>(), ExpectedY(host_x));
  EXPECT_TRUE(binding.BoundOutputs()[1].tensor().memory_info().IsHostReadable());
}

TEST(IoBindingTest, PreallocatedOutputIsWrittenInPlace) {
  const std::string model = DeviceModel();
  Session session = MakeSession(model, OptionsFor("testing"), TestEnv());
  Tensor host_x = Ramp(2, 1.0f);
  Tensor y = Tensor::Allocate(DataType::kFloat, {2, 8}, DeviceAllocator());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", ToDevice(host_x));
  binding.BindOutput("y", y);
  session.Run(binding);
  EXPECT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), y.raw_data());  // no extra buffer, no copy
  EXPECT_EQ(ToHost(y).ToVector<float>(), ExpectedY(host_x));

  // A host buffer bound to a device-produced output is copied into.
  Tensor host_y = Tensor::Allocate(DataType::kFloat, {2, 8});
  binding.BindOutput("y", host_y);
  session.Run(binding);
  EXPECT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), host_y.raw_data());
  EXPECT_EQ(host_y.ToVector<float>(), ExpectedY(host_x));
}

TEST(IoBindingTest, WrongPreallocatedShapeIsAnErrorAndTheSessionStaysUsable) {
  const std::string model = DeviceModel();
  Session session = MakeSession(model, OptionsFor("testing"), TestEnv());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", Ramp(2, 1.0f));
  binding.BindOutput("y", Tensor::Allocate(DataType::kFloat, {5, 8}, DeviceAllocator()));
  try {
    session.Run(binding);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'y'"), std::string::npos) << e.what();
  }
  binding.ClearBoundOutputs();
  binding.BindOutput("y", MemoryInfo::Host());
  session.Run(binding);
  EXPECT_EQ(binding.BoundOutputs()[0].tensor().ToVector<float>(), ExpectedY(Ramp(2, 1.0f)));
}

TEST(IoBindingTest, BindingsCanBeClearedAndReplaced) {
  const std::string model = DeviceModel();
  Session session = MakeSession(model, OptionsFor("testing"), TestEnv());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", Ramp(1, 1.0f));
  binding.BindOutput("z", MemoryInfo::Host());
  session.Run(binding);
  ASSERT_EQ(binding.BoundOutputs().size(), 1u);
  binding.ClearBoundInputs();
  EXPECT_THROW(session.Run(binding), Error);  // x is no longer bound
  binding.BindInput("x", ToDevice(Ramp(4, 2.0f)));
  binding.ClearBoundOutputs();
  binding.BindOutput("y", MemoryInfo::Host());
  session.Run(binding);
  EXPECT_EQ(binding.BoundOutputNames(), std::vector<std::string>{"y"});
  EXPECT_EQ(binding.BoundOutputs()[0].tensor().ToVector<float>(), ExpectedY(Ramp(4, 2.0f)));
  EXPECT_THROW(binding.BindInput("nope", Ramp(1, 1.0f)), Error);
  EXPECT_THROW(binding.BindOutput("nope", MemoryInfo::Host()), Error);
}

TEST(IoBindingTest, AsyncRunThenSynchronizeOutputs) {
  const std::string model = DeviceModel();
  Session session = MakeSession(model, OptionsFor("testing"), TestEnv());
  IoBinding binding = session.CreateIoBinding();
  Tensor host_x = Ramp(6, 0.25f);
  binding.BindInput("x", ToDevice(host_x));
  binding.BindOutput("y", TestingDevice().device_memory);
  RunOptions async;
  async.synchronize = false;
  session.Run(binding, async);
  binding.SynchronizeOutputs();
  EXPECT_EQ(ToHost(binding.BoundOutputs()[0].tensor()).ToVector<float>(), ExpectedY(host_x));
}

TEST(IoBindingTest, ConcurrentRunsFromEightThreadsGiveIdenticalResults) {
  const std::string model = DeviceModel();
  Session session = MakeSession(model, OptionsFor("testing"), TestEnv());
  constexpr int kThreads = 8, kRuns = 20;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        const Tensor host_x = Ramp(1 + t, 0.1f * static_cast<float>(t + 1));
        const std::vector<float> expected = ExpectedY(host_x);
        IoBinding binding = session.CreateIoBinding();
        binding.BindInput("x", t % 2 ? ToDevice(host_x) : host_x);
        binding.BindOutput("y", MemoryInfo::Host());
        for (int r = 0; r < kRuns; ++r) {
          session.Run(binding);
          if (binding.BoundOutputs()[0].tensor().ToVector<float>() != expected) failures[t] = "mismatch in run " + std::to_string(r);
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(IoBindingTest, OutOfDeviceMemoryIsAClearErrorAndTheSessionRecovers) {
  const std::string model = DeviceModel();
  SessionOptions options;
  options.AddProvider(kTestingEpName, {{"memory_limit_bytes", "65536"}});
  Session session = MakeSession(model, options, TestEnv());
  try {
    session.Run({{"x", Ramp(4096, 1.0f)}});  // 128 KiB per tensor: over the limit
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
  }
  EXPECT_EQ(session.Run({{"x", Ramp(2, 1.0f)}})[0].tensor().ToVector<float>(), ExpectedY(Ramp(2, 1.0f)));
}

// A device-resident feed that a CPU node reads: its copy to the host is queued on the device's stream, and the
// host must wait for it before the CPU kernel reads (no plan step produces a feed). The slow simulated device
// (task_delay_us) makes a missing wait read the copy's destination before the copy has run.
TEST(IoBindingTest, ACpuNodeReadingADeviceFeedWaitsForItsCopy) {
  const std::string model = GraphBuilder().Input("x", {-1, 8}).Node("Sigmoid", {"x"}, {"y"}).Output("y").Serialize();
  SessionOptions options;
  options.AddProvider(kTestingEpName, {{"task_delay_us", "2000"}});
  Session session = MakeSession(model, options, TestEnv());
  for (int run = 0; run < 3; ++run) {
    const Tensor x = Ramp(2, 0.5f + static_cast<float>(run));
    IoBinding binding = session.CreateIoBinding();
    binding.BindInput("x", ToDevice(x));
    binding.BindOutput("y", TestingDevice().device_memory);
    session.Run(binding);
    const std::vector<float> y = ToHost(binding.BoundOutputs()[0].tensor()).ToVector<float>();
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], 1.0f / (1.0f + std::exp(-x.Span<float>()[i])), 1e-6f) << "run " << run << ", element " << i;
  }
}

TEST(CopyTensorsTest, RoundTripsThroughTheDeviceWithAndWithoutAStream) {
  const Tensor host = Ramp(5, 3.0f);
  Tensor device = Tensor::Allocate(DataType::kFloat, host.shape(), DeviceAllocator());
  std::unique_ptr<Stream> stream = TestEnv().CreateStream(TestingDevice());
  ASSERT_NE(stream, nullptr);
  TestEnv().CopyTensors({&host, 1}, {&device, 1}, stream.get());
  Tensor back = Tensor::Allocate(DataType::kFloat, host.shape());
  TestEnv().CopyTensors({&device, 1}, {&back, 1}, stream.get());
  stream->Synchronize();
  EXPECT_EQ(back.ToVector<float>(), host.ToVector<float>());
  EXPECT_EQ(ToHost(ToDevice(host)).ToVector<float>(), host.ToVector<float>());
}

TEST(CopyTensorsTest, MismatchedPairsAreRejected) {
  const Tensor host = Ramp(1, 1.0f);
  Tensor wrong = Tensor::Allocate(DataType::kFloat, {3}, DeviceAllocator());
  EXPECT_THROW(TestEnv().CopyTensors({&host, 1}, {&wrong, 1}, nullptr), Error);
}

}  // namespace
}  // namespace tessera::test
