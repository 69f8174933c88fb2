#include <gtest/gtest.h>

#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

TEST(EnvironmentTest, DiscoversTheHostCpuAndTheSimulatedDevice) {
  bool cpu = false, npu = false;
  for (const HardwareDevice* h : TestEnv().GetHardwareDevices()) {
    if (h->type == DeviceType::kCpu) {
      cpu = true;
      EXPECT_FALSE(h->vendor.empty());
      EXPECT_FALSE(h->metadata.at("name").empty());
    }
    if (h->type == DeviceType::kNpu) npu = h->vendor_id == 0xFFFE;
  }
  EXPECT_TRUE(cpu);
  EXPECT_TRUE(npu);
  std::vector<const EpDevice*> devices = TestEnv().GetEpDevices();
  ASSERT_GE(devices.size(), 2u);
  EXPECT_EQ(devices[0]->ep_name, "CPUExecutionProvider");
  EXPECT_EQ(devices[0]->device_memory, MemoryInfo::Host());
}

TEST(EnvironmentTest, PluginLoadingErrorsAreClear) {
  Environment env;
  try {
    env.RegisterEpLibrary("missing", "/nonexistent/libnothing.so");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnothing.so"), std::string::npos);
  }
  try {  // a shared library without the entry point
    env.RegisterEpLibrary("libc", "libm.so.6");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("TesseraCreateEpFactory"), std::string::npos);
  }
  env.RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
  EXPECT_THROW(env.RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH), Error);
  EXPECT_NE(env.FindFactory(kTestingEpName), nullptr);
  const size_t hardware = env.GetHardwareDevices().size();
  env.UnregisterEpLibrary("testing");
  EXPECT_EQ(env.FindFactory(kTestingEpName), nullptr);
  EXPECT_EQ(env.GetHardwareDevices().size(), hardware - 1);  // its simulated device went with it
  // Registered again (under another name): its device is listed once, with one EP device.
  env.RegisterEpLibrary("again", TESSERA_TESTING_EP_PATH);
  EXPECT_EQ(env.GetHardwareDevices().size(), hardware);
  size_t testing_devices = 0;
  for (const EpDevice* d : env.GetEpDevices()) testing_devices += d->ep_name == kTestingEpName;
  EXPECT_EQ(testing_devices, 1u);
  env.UnregisterEpLibrary("again");
}

TEST(EnvironmentTest, SharedAllocatorsCanBeCreatedFetchedAndReleased) {
  Environment env;
  env.RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
  const EpDevice* device = nullptr;
  for (const EpDevice* d : env.GetEpDevices())
    if (d->ep_name == kTestingEpName) device = d;
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(env.GetSharedAllocator(device->device_memory), nullptr);
  ArenaOptions arena;
  arena.extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  AllocatorPtr shared = env.CreateSharedAllocator(*device, MemoryType::kDefault, &arena);
  EXPECT_EQ(env.GetSharedAllocator(device->device_memory), shared);
  EXPECT_EQ(shared->Info(), device->device_memory);
  void* p = shared->Allocate(1000);
  EXPECT_GE(shared->Stats().bytes_in_use, 1000u);
  shared->Free(p);
  AllocatorPtr pinned = env.CreateSharedAllocator(*device, MemoryType::kHostAccessible, nullptr);
  EXPECT_TRUE(pinned->Info().IsHostReadable());
  env.ReleaseSharedAllocator(device->device_memory);
  EXPECT_EQ(env.GetSharedAllocator(device->device_memory), nullptr);
  EXPECT_THROW(env.ReleaseSharedAllocator(device->device_memory), Error);
}

TEST(EnvironmentTest, SessionsUseTheSharedAllocator) {
  Environment env;
  env.RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
  const EpDevice* device = nullptr;
  for (const EpDevice* d : env.GetEpDevices())
    if (d->ep_name == kTestingEpName) device = d;
  ASSERT_NE(device, nullptr);
  ArenaOptions arena;
  AllocatorPtr shared = env.CreateSharedAllocator(*device, MemoryType::kDefault, &arena);
  const size_t before = shared->Stats().num_allocs;
  const std::string model = GraphBuilder().Input("x", {4}).Node("Relu", {"x"}, {"y"}).Output("y").Serialize();
  SessionOptions options;
  options.AddProvider(kTestingEpName);
  options.config["session.use_env_allocators"] = "1";
  Session session = MakeSession(model, options, env);
  auto out = session.Run({{"x", Tensor::FromVector<float>({4}, {-1, 2, -3, 4})}});
  EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{0, 2, 0, 4}));
  EXPECT_GT(shared->Stats().num_allocs, before);  // the input copy and Relu's output came from it
}

// ONNX Runtime's global thread pools: sessions that ask for them share the Environment's pool; once it exists every
// session must ask; it can only be set before the first session and once.
TEST(EnvironmentTest, GlobalThreadPoolsServeTheSessionsThatAskForThem) {
  const std::string model = GraphBuilder().Input("x", {4}).Node("Relu", {"x"}, {"y"}).Output("y").Serialize();
  SessionOptions shared;
  shared.use_per_session_threads = false;
  {
    Environment env;
    try {
      MakeSession(model, shared, env);
      ADD_FAILURE() << "a session asked for global pools the Environment does not have";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("SetGlobalThreadPools"), std::string::npos) << e.what();
    }
    try {
      env.SetGlobalThreadPools(2, 1);
      ADD_FAILURE() << "the pools were set after a session had been created";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("before the first one"), std::string::npos) << e.what();
    }
  }
  Environment env;
  EXPECT_EQ(env.global_intra_op_pool(), nullptr);
  env.SetGlobalThreadPools(2, 1);
  ASSERT_NE(env.global_intra_op_pool(), nullptr);
  EXPECT_EQ(env.global_intra_op_pool()->num_threads(), 2);
  EXPECT_TRUE(env.global_intra_op_pool()->shared());
  EXPECT_EQ(env.global_inter_op_threads(), 1);
  EXPECT_THROW(env.SetGlobalThreadPools(4, 1), Error);  // set once
  shared.intra_op_threads = 7;                          // ignored: the global pool serves the session
  Session a = MakeSession(model, shared, env);
  Session b = MakeSession(model, shared, env);
  for (Session* s : {&a, &b}) {
    auto out = s->Run({{"x", Tensor::FromVector<float>({4}, {-1, 2, -3, 4})}});
    EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{0, 2, 0, 4}));
  }
  try {
    MakeSession(model, SessionOptions{}, env);
    ADD_FAILURE() << "a per-session-threads session was accepted by an Environment with global pools";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use_per_session_threads = false"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::test
