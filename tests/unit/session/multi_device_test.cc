// Several devices of one kind in one process (issue 19), on two instances of the simulated device
// (TESSERA_TESTING_DEVICE_COUNT=2): EP devices and memory per instance, a session per device, peer copies with
// CopyTensors, a pipeline split over two devices, and DataParallelRunner.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <future>
#include <numeric>

#include "test_env.h"
#include "unit/session/graph_builder.h"
#include "unit/session/multi_device_models.h"

namespace tessera::test {
namespace {

// An Environment whose testing plugin has two instances (the variable is read when the plugin registers).
std::unique_ptr<Environment> TwoDeviceEnv() {
  auto env = std::make_unique<Environment>();
  setenv("TESSERA_TESTING_DEVICE_COUNT", "2", 1);
  try {
    env->RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
  } catch (...) {
    unsetenv("TESSERA_TESTING_DEVICE_COUNT");
    throw;
  }
  unsetenv("TESSERA_TESTING_DEVICE_COUNT");
  return env;
}

std::vector<const EpDevice*> TestingDevices(const Environment& env) {
  std::vector<const EpDevice*> devices;
  for (const EpDevice* d : env.GetEpDevices())
    if (d->ep_name == kTestingEpName) devices.push_back(d);
  return devices;
}

AllocatorPtr DeviceAllocator(Environment& env, const EpDevice& device) {
  AllocatorPtr allocator = env.GetSharedAllocator(device.device_memory);
  return allocator ? allocator : env.CreateSharedAllocator(device, MemoryType::kDefault, nullptr);
}

SessionOptions CpuOnly() {
  SessionOptions options;
  options.AddProvider("CPUExecutionProvider");
  return options;
}

std::filesystem::path WriteModel(const std::string& bytes, const std::string& name) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / (name + std::to_string(getpid()) + ".onnx");
  FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

TEST(MultiDeviceTest, EachInstanceIsAnEpDeviceWithItsOwnMemory) {
  std::unique_ptr<Environment> env = TwoDeviceEnv();
  const std::vector<const EpDevice*> devices = TestingDevices(*env);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]->device->ordinal, 0u);
  EXPECT_EQ(devices[1]->device->ordinal, 1u);
  EXPECT_EQ(devices[1]->device_memory.device_id, 1u);
  EXPECT_FALSE(devices[0]->device_memory == devices[1]->device_memory);
  EXPECT_FALSE(*devices[0]->host_accessible_memory == *devices[1]->host_accessible_memory);
  // A session per device reads its input in that device's memory.
  const std::string model = MlpModel(4);
  for (int index = 0; index < 2; ++index) {
    SessionOptions options;
    options.providers.push_back({kTestingEpName, {}, index});
    Session session(*env, model.data(), model.size(), options);
    EXPECT_EQ(session.InputMemoryInfo("x"), devices[static_cast<size_t>(index)]->device_memory);
  }
  SessionOptions out_of_range;
  out_of_range.providers.push_back({kTestingEpName, {}, 2});
  try {
    Session session(*env, model.data(), model.size(), out_of_range);
    ADD_FAILURE() << "device index 2 of 2 devices must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device index 2 is out of range"), std::string::npos) << e.what();
  }
}

TEST(MultiDeviceTest, PeerCopiesBetweenInstancesOnAStream) {
  std::unique_ptr<Environment> env = TwoDeviceEnv();
  const std::vector<const EpDevice*> devices = TestingDevices(*env);
  ASSERT_EQ(devices.size(), 2u);
  const Tensor host = RampTensor(3, 5, 1.0f);
  Tensor on0 = Tensor::Allocate(DataType::kFloat, host.shape(), DeviceAllocator(*env, *devices[0]));
  Tensor on1 = Tensor::Allocate(DataType::kFloat, host.shape(), DeviceAllocator(*env, *devices[1]));
  Tensor back = Tensor::Allocate(DataType::kFloat, host.shape());
  std::unique_ptr<Stream> stream = env->CreateStream(*devices[0]);
  env->CopyTensors({&host, 1}, {&on0, 1}, stream.get());
  env->CopyTensors({&on0, 1}, {&on1, 1}, stream.get());  // device 0 -> device 1
  stream->Synchronize();
  env->CopyTensors({&on1, 1}, {&back, 1}, nullptr);
  EXPECT_EQ(back.ToVector<float>(), host.ToVector<float>());
}

// The first half of a computation on device 0, its activations passed device to device, the second half on
// device 1: the pipeline-parallel pattern, checked against one CPU session of the whole.
TEST(MultiDeviceTest, PipelineSplitOverTwoDevicesMatchesOneCpuSession) {
  std::unique_ptr<Environment> env = TwoDeviceEnv();
  const std::vector<const EpDevice*> devices = TestingDevices(*env);
  ASSERT_EQ(devices.size(), 2u);
  const std::string first = MlpModel(8), second = MlpModel(8);
  SessionOptions on0, on1;
  on0.providers.push_back({kTestingEpName, {}, 0});
  on1.providers.push_back({kTestingEpName, {}, 1});
  Session a(*env, first.data(), first.size(), on0);
  Session b(*env, second.data(), second.size(), on1);
  Session cpu(*env, first.data(), first.size(), CpuOnly());
  ASSERT_EQ(cpu.providers(), std::vector<std::string>{"CPUExecutionProvider"});

  const Tensor x = RampTensor(2, 8, 0.5f);
  IoBinding bind_a = a.CreateIoBinding();
  bind_a.BindInput("x", x);
  bind_a.BindOutput("y", devices[0]->device_memory);
  a.Run(bind_a);
  const Tensor& y0 = bind_a.BoundOutputs()[0].tensor();
  EXPECT_EQ(y0.memory_info(), devices[0]->device_memory);
  Tensor y1 = Tensor::Allocate(DataType::kFloat, y0.shape(), DeviceAllocator(*env, *devices[1]));
  env->CopyTensors({&y0, 1}, {&y1, 1}, nullptr);
  IoBinding bind_b = b.CreateIoBinding();
  bind_b.BindInput("x", y1);
  bind_b.BindOutput("y", MemoryInfo{});
  b.Run(bind_b);

  const Tensor expected_mid = cpu.Run({{"x", x}})[0].tensor();
  const Tensor expected = cpu.Run({{"x", expected_mid}})[0].tensor();
  ExpectNearRelative(bind_b.BoundOutputs()[0].tensor(), expected, "pipeline output");
}

// Each run on the simulated devices takes a few milliseconds (task_delay_us), so that while one device works
// the other one is free and must take the next request: the spread does not depend on how fast threads start.
TEST(MultiDeviceTest, DataParallelRunnerSpreadsRequestsAndKeepsTheirOrder) {
  std::unique_ptr<Environment> env = TwoDeviceEnv();
  const std::filesystem::path model = WriteModel(MlpModel(96), "data_parallel");
  Session cpu(*env, model, CpuOnly());
  DataParallelOptions options;
  options.session.providers.push_back({kTestingEpName, {{"task_delay_us", "1000"}}, 0});
  DataParallelRunner runner(*env, model, TestingDevices(*env), options);
  ASSERT_EQ(runner.size(), 2u);
  EXPECT_EQ(runner.session(1).InputMemoryInfo("x").device_id, 1u);
  std::vector<Session::NamedValues> requests;
  for (int i = 0; i < 32; ++i) requests.push_back({{"x", RampTensor(4, 96, static_cast<float>(i))}});
  const std::vector<std::vector<Value>> outputs = runner.RunAll(requests);
  ASSERT_EQ(outputs.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const Tensor expected = cpu.Run(requests[i])[0].tensor();
    ExpectNearRelative(outputs[i][0].tensor(), expected, "request " + std::to_string(i));
  }
  const std::vector<uint64_t> done = runner.CompletedPerSession();
  EXPECT_EQ(std::accumulate(done.begin(), done.end(), uint64_t{0}), 32u);
  EXPECT_GT(done[0], 0u);
  EXPECT_GT(done[1], 0u);
  std::filesystem::remove(model);
}

TEST(MultiDeviceTest, DataParallelRunnerReportsAFailedRequestAndGoesOn) {
  std::unique_ptr<Environment> env = TwoDeviceEnv();
  const std::filesystem::path model = WriteModel(MlpModel(4), "data_parallel_errors");
  DataParallelOptions options;
  options.runs_per_device = 2;
  DataParallelRunner runner(*env, model, TestingDevices(*env), options);
  std::future<std::vector<Value>> bad = runner.Submit({{"x", RampTensor(2, 3, 0.0f)}});  // 3 columns, not 4
  std::future<std::vector<Value>> good = runner.Submit({{"x", RampTensor(2, 4, 0.0f)}});
  try {
    bad.get();
    ADD_FAILURE() << "a feed of the wrong shape must fail its request";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(good.get()[0].tensor().shape(), Shape({2, 4}));
  EXPECT_THROW(runner.RunAll({{{"x", RampTensor(2, 4, 0.0f)}}, {{"x", RampTensor(1, 5, 0.0f)}}}), Error);
  EXPECT_THROW(DataParallelRunner(*env, model, {}), Error);
  DataParallelOptions zero;
  zero.runs_per_device = 0;
  EXPECT_THROW(DataParallelRunner(*env, model, TestingDevices(*env), zero), Error);
  std::filesystem::remove(model);
}

}  // namespace
}  // namespace tessera::test
