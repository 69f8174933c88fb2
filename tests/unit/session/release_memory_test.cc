// Session::ReleaseMemory and RunOptions config "memory.enable_memory_arena_shrinkage": memory the session reserved
// but no tensor uses goes back (arena regions, same-stream caches), tensors the caller holds stay valid, and the
// session keeps running.
#include <gtest/gtest.h>

#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// y = Neg(Relu(x)) + x: the intermediates are as large as x.
std::string Model(int64_t n) {
  return GraphBuilder()
      .Input("x", {n})
      .Node("Relu", {"x"}, {"r"})
      .Node("Neg", {"r"}, {"m"})
      .Node("Add", {"m", "x"}, {"y"})
      .Output("y")
      .Serialize();
}

struct MemorySession {
  std::unique_ptr<Environment> env = std::make_unique<Environment>();
  AllocatorPtr arena;
  std::unique_ptr<Session> session;
};

// A session allocating from a shared arena of `ep_name`'s memory, so the test can watch what it reserves.
MemorySession Create(const std::string& ep_name, int64_t n) {
  MemorySession s;
  if (ep_name == kTestingEpName) s.env->RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
  const EpDevice* device = nullptr;
  for (const EpDevice* d : s.env->GetEpDevices())
    if (d->ep_name == ep_name) device = d;
  EXPECT_NE(device, nullptr);
  ArenaOptions arena;
  s.arena = s.env->CreateSharedAllocator(*device, MemoryType::kDefault, &arena);
  SessionOptions options;
  options.AddProvider(ep_name);
  options.config["session.use_env_allocators"] = "1";
  options.config["session.prepare_static_shapes"] = "0";
  const std::string model = Model(n);
  s.session = std::make_unique<Session>(*s.env, model.data(), model.size(), options);
  return s;
}

Tensor Ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 11) - 5);
  return Tensor::FromVector<float>({n}, v);
}

float Expected(float x) { return -std::max(x, 0.0f) + x; }

TEST(ReleaseMemoryTest, ArenaRegionsGoBackAndHeldOutputsStayValid) {
  for (const std::string& ep : {std::string("CPUExecutionProvider"), std::string(kTestingEpName)}) {
    SCOPED_TRACE(ep);
    constexpr int64_t kN = int64_t{1} << 22;  // 16 MiB per tensor
    MemorySession s = Create(ep, kN);
    const Tensor x = Ramp(kN);
    std::vector<Value> out = s.session->Run({{"x", x}});
    const size_t reserved = s.arena->Stats().bytes_reserved;
    const size_t in_use = s.arena->Stats().bytes_in_use;
    // The CPU's intermediates are free arena chunks after the run; the device's are held by the compute stream's
    // same-stream cache (in use for the arena) until ReleaseMemory trims it.
    if (ep == "CPUExecutionProvider") {
      ASSERT_GT(reserved, in_use) << "the intermediates' memory stays reserved";
    }
    const size_t released = s.session->ReleaseMemory();
    EXPECT_GT(released, 0u);
    EXPECT_LT(s.arena->Stats().bytes_reserved, reserved);
    if (ep == "CPUExecutionProvider") {
      EXPECT_EQ(s.arena->Stats().bytes_in_use, in_use) << "nothing in use was freed";
    } else {
      EXPECT_LT(s.arena->Stats().bytes_in_use, in_use) << "the stream cache was trimmed";
    }
    const std::vector<float> y = out[0].tensor().ToVector<float>();
    for (size_t i = 0; i < y.size(); i += 4099) ASSERT_EQ(y[i], Expected(x.ToVector<float>()[i])) << i;
    std::vector<Value> again = s.session->Run({{"x", x}});  // reserves again
    EXPECT_EQ(again[0].tensor().ToVector<float>()[7], Expected(x.ToVector<float>()[7]));
  }
}

TEST(ReleaseMemoryTest, RunOptionShrinksTheListedDevicesAtTheEndOfTheRun) {
  constexpr int64_t kN = int64_t{1} << 22;
  MemorySession s = Create(kTestingEpName, kN);
  const Tensor x = Ramp(kN);
  s.session->Run({{"x", x}});
  const size_t after_plain_run = s.arena->Stats().bytes_reserved;
  RunOptions other_device;
  other_device.config["memory.enable_memory_arena_shrinkage"] = "cpu:0;gpu:1";  // not this device
  s.session->Run({{"x", x}}, {}, other_device);
  EXPECT_EQ(s.arena->Stats().bytes_reserved, after_plain_run);
  RunOptions shrink;
  shrink.config["memory.enable_memory_arena_shrinkage"] = "gpu:0";
  const std::vector<Value> out = s.session->Run({{"x", x}}, {}, shrink);
  EXPECT_LT(s.arena->Stats().bytes_reserved, after_plain_run);
  EXPECT_EQ(out[0].tensor().ToVector<float>()[3], Expected(x.ToVector<float>()[3]));
}

}  // namespace
}  // namespace tessera::test
