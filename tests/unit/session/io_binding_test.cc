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

// A 3 x 4 window at (2, 3) of a 6 x 10 float image, uploaded as a region, then written back as a region into its
// place in a zeroed image on the device: with a stream (queued behind a slow device) and without one.
TEST(CopyTensorRegionsTest, WindowsGoUpAndComeBackInPlace) {
  std::vector<float> pixels(60);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i);
  const Tensor image = Tensor::FromVector<float>({6, 10}, pixels);
  const EpDevice& device = TestingDevice();
  ASSERT_TRUE(TestEnv().CanCopyRegions(MemoryInfo::Host(), device.device_memory));
  const AllocatorPtr pinned = device.factory->CreateAllocator(*device.host_accessible_memory);
  for (bool with_stream : {true, false}) {
    std::unique_ptr<Stream> stream = with_stream ? TestEnv().CreateStream(device) : nullptr;
    Tensor window = Tensor::Allocate(DataType::kFloat, {3, 4}, DeviceAllocator());
    const CopyRegion up{&image, &window, (2 * 10 + 3) * 4, 10 * 4, 0, 4 * 4, 4 * 4, 3};
    TestEnv().CopyTensorRegions({&up, 1}, stream.get());
    Tensor placed = Tensor::Allocate(DataType::kFloat, {6, 10}, pinned);
    std::fill_n(placed.Data<float>(), 60, 0.0f);
    const CopyRegion down{&window, &placed, 0, 4 * 4, (2 * 10 + 3) * 4, 10 * 4, 4 * 4, 3};
    TestEnv().CopyTensorRegions({&down, 1}, stream.get());
    if (stream) stream->Synchronize();
    EXPECT_EQ(ToHost(window).ToVector<float>(),
              (std::vector<float>{23, 24, 25, 26, 33, 34, 35, 36, 43, 44, 45, 46}));
    for (int64_t y = 0; y < 6; ++y)
      for (int64_t x = 0; x < 10; ++x) {
        const bool inside = y >= 2 && y < 5 && x >= 3 && x < 7;
        EXPECT_EQ(placed.Data<float>()[y * 10 + x], inside ? pixels[static_cast<size_t>(y * 10 + x)] : 0.0f)
            << "(" << y << ", " << x << ")" << (with_stream ? " on a stream" : "");
      }
  }
  // Host to host goes through the CPU EP's transfer.
  Tensor copy = Tensor::Allocate(DataType::kFloat, {2, 2});
  const CopyRegion corner{&image, &copy, 0, 10 * 4, 0, 2 * 4, 2 * 4, 2};
  TestEnv().CopyTensorRegions({&corner, 1}, nullptr);
  EXPECT_EQ(copy.ToVector<float>(), (std::vector<float>{0, 1, 10, 11}));
}

TEST(CopyTensorRegionsTest, RegionsOutsideTheirBuffersAreRejected) {
  const Tensor image = Tensor::FromVector<float>({4, 4}, std::vector<float>(16, 1.0f));
  Tensor small = Tensor::Allocate(DataType::kFloat, {2, 2}, DeviceAllocator());
  const auto message = [&](const CopyRegion& r) -> std::string {
    try {
      TestEnv().CopyTensorRegions({&r, 1}, nullptr);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  // Three rows of 8 bytes do not fit a 16-byte destination; the source's last row runs past its 64 bytes.
  EXPECT_NE(message({&image, &small, 0, 16, 0, 8, 8, 3}).find("runs past the destination"), std::string::npos);
  EXPECT_NE(message({&image, &small, 44, 16, 0, 8, 8, 2}).find("runs past the source"), std::string::npos);
  // Rows that overlap (a pitch shorter than a row).
  EXPECT_NE(message({&image, &small, 0, 4, 0, 8, 8, 2}).find("pitch 4 is shorter than a row"), std::string::npos);
  // An empty region copies nothing and is fine.
  EXPECT_EQ(message({&image, &small, 0, 0, 0, 0, 0, 0}), "");
}

}  // namespace
}  // namespace tessera::test
