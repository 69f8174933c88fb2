// RunOptions::stream: runs ordered with the application's own stream on the device, without host waits.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "providers/testing/testing_stream.h"
#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// y = relu(x) * x + x, all on the simulated device.
std::string DeviceModel() {
  return GraphBuilder()
      .Input("x", {-1, 8})
      .Node("Relu", {"x"}, {"r"})
      .Node("Mul", {"r", "x"}, {"m"})
      .Node("Add", {"m", "x"}, {"y"})
      .Output("y")
      .Serialize();
}

const EpDevice& TestingDevice() {
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == kTestingEpName) return *d;
  throw std::runtime_error("testing EP not registered");
}

AllocatorPtr DeviceAllocator() {
  static AllocatorPtr allocator = TestingDevice().factory->CreateAllocator(TestingDevice().device_memory);
  return allocator;
}

Tensor Filled(int64_t rows, float base) {
  std::vector<float> v(static_cast<size_t>(rows) * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + 0.25f * static_cast<float>(i % 11) - 1.0f;
  return Tensor::FromVector<float>({rows, 8}, v);
}

std::vector<float> Expected(const Tensor& x) {
  std::vector<float> y;
  for (float v : x.Span<float>()) y.push_back(std::max(v, 0.0f) * v + v);
  return y;
}

// Queues on `stream` a task that sleeps (a long kernel of the application) and then sets `done`.
void QueueSlowKernel(Stream& stream, std::chrono::milliseconds how_long, std::atomic<bool>& done) {
  static_cast<testing_ep::TestingQueue*>(stream.native_handle())->Enqueue([how_long, &done] {
    std::this_thread::sleep_for(how_long);
    done = true;
  });
}

// The application writes the input on its stream after a long kernel, runs the model with RunOptions::stream and
// synchronize = false, and reads the output back on the same stream: the run must see the new input, the read must
// see the run's output, and the host must not wait for any of it.
TEST(CallerStreamTest, BindingRunIsOrderedBetweenTheCallersWorkWithoutHostWaits) {
  Session session = MakeSession(DeviceModel(), OptionsFor("testing"), TestEnv());
  std::unique_ptr<Stream> app = TestEnv().CreateStream(TestingDevice());
  ASSERT_NE(app, nullptr);
  const Tensor stale = Filled(4, -3.0f), fresh = Filled(4, 2.0f);
  Tensor x = Tensor::Allocate(DataType::kFloat, {4, 8}, DeviceAllocator());
  Tensor y = Tensor::Allocate(DataType::kFloat, {4, 8}, DeviceAllocator());
  TestEnv().CopyTensors({&stale, 1}, {&x, 1}, nullptr);
  Tensor result = Tensor::Allocate(DataType::kFloat, {4, 8});

  std::atomic<bool> kernel_done{false};
  QueueSlowKernel(*app, std::chrono::milliseconds(400), kernel_done);
  TestEnv().CopyTensors({&fresh, 1}, {&x, 1}, app.get());  // the application's producer of x
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", x);
  binding.BindOutput("y", y);
  RunOptions options;
  options.stream = app.get();
  options.synchronize = false;
  session.Run(binding, options);
  EXPECT_FALSE(kernel_done.load()) << "Run waited on the host for the caller's stream";
  const Tensor& out = binding.BoundOutputs()[0].tensor();
  TestEnv().CopyTensors({&out, 1}, {&result, 1}, app.get());  // the application's consumer of y
  EXPECT_FALSE(kernel_done.load());
  app->Synchronize();
  EXPECT_TRUE(kernel_done.load());
  EXPECT_EQ(result.ToVector<float>(), Expected(fresh));
}

// Outputs bound to a memory are copied by the run on its own streams; the caller's stream waits for those copies.
TEST(CallerStreamTest, OutputsBoundToAMemoryAreReadyForTheCallersStream) {
  Session session = MakeSession(DeviceModel(), OptionsFor("testing"), TestEnv());
  std::unique_ptr<Stream> app = TestEnv().CreateStream(TestingDevice());
  const Tensor fresh = Filled(3, 1.5f);
  Tensor x = Tensor::Allocate(DataType::kFloat, {3, 8}, DeviceAllocator());
  std::atomic<bool> kernel_done{false};
  QueueSlowKernel(*app, std::chrono::milliseconds(200), kernel_done);
  TestEnv().CopyTensors({&fresh, 1}, {&x, 1}, app.get());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", x);
  binding.BindOutput("y", TestingDevice().device_memory);
  RunOptions options;
  options.stream = app.get();
  options.synchronize = false;
  for (int i = 0; i < 3; ++i) {  // repeated runs reuse the session's streams and memory
    session.Run(binding, options);
    const Tensor& out = binding.BoundOutputs()[0].tensor();
    Tensor result = Tensor::Allocate(DataType::kFloat, {3, 8});
    TestEnv().CopyTensors({&out, 1}, {&result, 1}, app.get());
    app->Synchronize();
    EXPECT_EQ(result.ToVector<float>(), Expected(fresh)) << "run " << i;
  }
}

// Run(feeds) with a device feed the caller's stream is still producing: the run reads it after the producer.
TEST(CallerStreamTest, FeedsRunReadsDeviceFeedsAfterTheCallersProducer) {
  Session session = MakeSession(DeviceModel(), OptionsFor("testing"), TestEnv());
  std::unique_ptr<Stream> app = TestEnv().CreateStream(TestingDevice());
  const Tensor stale = Filled(2, -5.0f), fresh = Filled(2, 3.0f);
  Tensor x = Tensor::Allocate(DataType::kFloat, {2, 8}, DeviceAllocator());
  TestEnv().CopyTensors({&stale, 1}, {&x, 1}, nullptr);
  std::atomic<bool> kernel_done{false};
  QueueSlowKernel(*app, std::chrono::milliseconds(200), kernel_done);
  TestEnv().CopyTensors({&fresh, 1}, {&x, 1}, app.get());
  RunOptions options;
  options.stream = app.get();
  std::vector<Value> outputs = session.Run({{"x", Value(x)}}, {}, options);
  EXPECT_EQ(outputs[0].tensor().ToVector<float>(), Expected(fresh));
}

// A session without device streams (CPU only) given a device stream waits for it on the host before reading.
// Native synchronization points (Stream::WaitNative, Event::native_point) exist where a device API has them (CUDA
// events, Vulkan timeline semaphores); the simulated device has none: an empty point, and a clear error.
TEST(CallerStreamTest, NativeSyncPointsAreRefusedWhereTheDeviceHasNone) {
  std::unique_ptr<Stream> stream = TestEnv().CreateStream(TestingDevice());
  std::unique_ptr<Event> event = stream->CreateEvent();
  event->Record(*stream);
  EXPECT_EQ(event->native_point().handle, nullptr);
  try {
    stream->WaitNative({reinterpret_cast<void*>(uintptr_t{1}), 1});
    ADD_FAILURE() << "WaitNative accepted on the simulated device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotImplemented);
    EXPECT_NE(std::string(e.what()).find("no native synchronization"), std::string::npos) << e.what();
  }
}

TEST(CallerStreamTest, CpuSessionWaitsForTheCallersStreamOnTheHost) {
  Session session = MakeSession(DeviceModel(), OptionsFor("cpu"), TestEnv());
  std::unique_ptr<Stream> app = TestEnv().CreateStream(TestingDevice());
  const Tensor fresh = Filled(2, 0.5f);
  Tensor x = Tensor::Allocate(DataType::kFloat, {2, 8});
  std::atomic<bool> kernel_done{false};
  QueueSlowKernel(*app, std::chrono::milliseconds(200), kernel_done);
  TestEnv().CopyTensors({&fresh, 1}, {&x, 1}, app.get());  // written into host memory by the device's stream
  RunOptions options;
  options.stream = app.get();
  std::vector<Value> outputs = session.Run({{"x", Value(x)}}, {}, options);
  EXPECT_TRUE(kernel_done.load());
  EXPECT_EQ(outputs[0].tensor().ToVector<float>(), Expected(fresh));
}

}  // namespace
}  // namespace tessera::test
