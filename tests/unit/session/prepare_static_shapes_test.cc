// Free dimension overrides and the preparation run at session creation (session.prepare_static_shapes): a
// session whose inputs all have static shapes runs once on zeros before it is returned, so its kernels'
// first-call work (primitives, memory) is done; the CPU allocator shows it.
#include <gtest/gtest.h>

#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// A CPU session allocating from the Environment's shared CPU arena; returns the arena's allocation count
// after creation (before any Run).
struct PreparedSession {
  std::unique_ptr<Environment> env = std::make_unique<Environment>();
  AllocatorPtr arena;
  std::unique_ptr<Session> session;
  size_t allocations_at_creation = 0;
};

// `ep_name`'s shared arena counts the allocations (the simulated device's plugin is registered for
// "TestingExecutionProvider", which the options must then name).
PreparedSession Create(const std::string& model, SessionOptions options,
                       const std::string& ep_name = "CPUExecutionProvider") {
  PreparedSession p;
  if (ep_name == kTestingEpName) p.env->RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
  const EpDevice* device = nullptr;
  for (const EpDevice* d : p.env->GetEpDevices())
    if (d->ep_name == ep_name) device = d;
  EXPECT_NE(device, nullptr);
  ArenaOptions arena;
  p.arena = p.env->CreateSharedAllocator(*device, MemoryType::kDefault, &arena);
  options.config["session.use_env_allocators"] = "1";
  p.session = std::make_unique<Session>(*p.env, model.data(), model.size(), options);
  p.allocations_at_creation = p.arena->Stats().num_allocs;
  return p;
}

// Relu then Neg: the intermediate comes from the session's CPU allocator.
std::string ReluNeg(std::vector<int64_t> dims) {
  return GraphBuilder().Input("x", dims).Node("Relu", {"x"}, {"r"}).Node("Neg", {"r"}, {"y"}).Output("y").Serialize();
}

TEST(PrepareStaticShapesTest, StaticInputsArePreparedAtCreationUnlessTurnedOff) {
  PreparedSession prepared = Create(ReluNeg({2, 3}), SessionOptions{});
  EXPECT_GT(prepared.allocations_at_creation, 0u) << "the preparation run allocates the intermediate";
  std::vector<Value> out =
      prepared.session->Run({{"x", Tensor::FromVector<float>({2, 3}, {-1, 2, -3, 4, -5, 6})}});
  EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{0, -2, 0, -4, 0, -6}));

  SessionOptions off;
  off.config["session.prepare_static_shapes"] = "0";
  EXPECT_EQ(Create(ReluNeg({2, 3}), off).allocations_at_creation, 0u);
}

// Sessions on a device are prepared too (twice, so that EPs which record a step on its second call with the
// same buffers have done so); the device's arena shows the preparation's allocations.
TEST(PrepareStaticShapesTest, SessionsOnADeviceArePreparedByDefault) {
  const std::string model =
      GraphBuilder().Input("x", {2, 3}).Node("Relu", {"x"}, {"r"}).Node("Add", {"r", "r"}, {"y"}).Output("y").Serialize();
  SessionOptions options;
  options.AddProvider(kTestingEpName);
  PreparedSession prepared = Create(model, options, kTestingEpName);
  EXPECT_GT(prepared.allocations_at_creation, 0u) << "the preparation runs allocate on the device";
  EXPECT_EQ(prepared.session->providers().front(), kTestingEpName);
  std::vector<Value> out = prepared.session->Run({{"x", Tensor::FromVector<float>({2, 3}, {-1, 2, -3, 4, -5, 6})}});
  EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{0, 4, 0, 8, 0, 12}));

  options.config["session.prepare_static_shapes"] = "0";
  EXPECT_EQ(Create(model, options, kTestingEpName).allocations_at_creation, 0u);
}

TEST(PrepareStaticShapesTest, SymbolicInputsNeedFreeDimensionOverrides) {
  // GraphBuilder names a -1 dim "N".
  EXPECT_EQ(Create(ReluNeg({-1, 3}), SessionOptions{}).allocations_at_creation, 0u);

  SessionOptions options;
  options.free_dimension_overrides["N"] = 2;
  PreparedSession fixed = Create(ReluNeg({-1, 3}), options);
  EXPECT_GT(fixed.allocations_at_creation, 0u);
  ASSERT_EQ(fixed.session->inputs()[0].shape->at(0).value, 2);
  std::vector<Value> out = fixed.session->Run({{"x", Tensor::FromVector<float>({2, 3}, {1, 1, 1, -1, -1, -1})}});
  EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{-1, -1, -1, 0, 0, 0}));
  try {
    fixed.session->Run({{"x", Tensor::FromVector<float>({1, 3}, {1, 2, 3})}});
    ADD_FAILURE() << "a feed that contradicts the override must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }

  SessionOptions negative;
  negative.free_dimension_overrides["N"] = -3;
  try {
    Create(ReluNeg({-1, 3}), negative);
    ADD_FAILURE() << "a negative override must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("free dimension override 'N' = -3"), std::string::npos) << e.what();
  }
}

TEST(PrepareStaticShapesTest, ModelsWithRandomOpsAreNotRunAtCreation) {
  const std::string model = GraphBuilder()
                                .Input("x", {2, 3})
                                .Node("RandomUniformLike", {"x"}, {"r"})
                                .Node("Add", {"x", "r"}, {"y"})
                                .Output("y")
                                .Serialize();
  EXPECT_EQ(Create(model, SessionOptions{}).allocations_at_creation, 0u);
}

}  // namespace
}  // namespace tessera::test
