// Free dimension overrides and the preparation run at session creation (session.prepare_static_shapes): a
// session whose inputs all have static shapes runs once on zeros before it is returned, so its kernels'
// first-call work (primitives, memory) is done; the CPU allocator shows it.
#include <gtest/gtest.h>

#include "core/logging.h"
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

// Which preparation a CPU session made at creation, from its verbose log: "dry", "full" or "none".
std::string PreparationOf(const std::string& model, const std::string& setting = "") {
  SessionOptions options;
  options.log_level = LogLevel::kVerbose;
  if (!setting.empty()) options.config["session.prepare_static_shapes"] = setting;
  const LogLevel saved = LogThreshold();
  ::testing::internal::CaptureStderr();
  size_t allocations = 0;
  try {
    allocations = Create(model, options).allocations_at_creation;
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    SetLogThreshold(saved);
    throw;
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  SetLogThreshold(saved);
  if (log.find("prepared with a dry run") != std::string::npos) return "dry";
  return allocations > 0 ? "full" : "none";
}

// x[1,3,8,8] -> Conv(W[4,3,3,3], B, pads 1) -> Relu -> [the caller's tail] -> y
GraphBuilder ConvModel() {
  std::vector<float> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
  GraphBuilder g;
  g.Input("x", {1, 3, 8, 8})
      .FloatInitializer("W", {4, 3, 3, 3}, w)
      .FloatInitializer("B", {4}, {0.5f, -0.5f, 1.0f, 0.0f})
      .Node("Conv", {"x", "W", "B"}, {"c"})
      .IntsAttribute("pads", {1, 1, 1, 1})
      .Node("Relu", {"c"}, {"r"});
  return g;
}

// A CPU session whose shapes all follow from its inputs prepares without computing its convolutions; its results
// equal those of a fully prepared session and of an unprepared one.
TEST(PrepareStaticShapesTest, ConvolutionModelsArePreparedDry) {
  const std::string model = ConvModel().Node("ReduceMean", {"r"}, {"y"}).IntsAttribute("axes", {1}).Output("y")
                                .Serialize();
  EXPECT_EQ(PreparationOf(model), "dry");
  EXPECT_EQ(PreparationOf(model, "full"), "full");
  EXPECT_EQ(PreparationOf(model, "0"), "none");
  std::vector<float> input(3 * 8 * 8);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(static_cast<int>(i % 11) - 5) * 0.3f;
  const Tensor x = Tensor::FromVector<float>({1, 3, 8, 8}, input);
  std::vector<std::vector<float>> results;
  for (const char* setting : {"1", "full", "0"}) {
    SessionOptions options;
    options.config["session.prepare_static_shapes"] = setting;
    PreparedSession p = Create(model, options);
    results.push_back(p.session->Run({{"x", x}})[0].tensor().ToVector<float>());
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
  bool nonzero = false;
  for (float v : results[0]) nonzero = nonzero || v != 0.0f;
  EXPECT_TRUE(nonzero) << "the first run computes the convolution the dry preparation skipped";
}

// Output shapes that depend on computed values, shapes given as data and integer division keep the full
// preparation run.
TEST(PrepareStaticShapesTest, ValueDependentShapesArePreparedInFull) {
  EXPECT_EQ(PreparationOf(ConvModel().Node("NonZero", {"r"}, {"y"}).Output("y", 7).Serialize()), "full");
  // A shape that arrives as data (here a graph input; the full run on zeros fails to reshape and is ignored). A
  // shape computed from static shapes (Shape -> Reshape) is folded into a constant by the optimizer and runs dry.
  EXPECT_EQ(PreparationOf(ConvModel()
                              .Input("shape", {2}, 7)
                              .Node("Reshape", {"r", "shape"}, {"y"})
                              .Output("y")
                              .Serialize()),
            "full");
  EXPECT_EQ(PreparationOf(ConvModel()
                              .Node("Shape", {"r"}, {"s"})
                              .Node("Reshape", {"r", "s"}, {"y"})
                              .Output("y")
                              .Serialize()),
            "dry");
  EXPECT_EQ(PreparationOf(ConvModel()
                              .Int64Initializer("shape", {2}, {4, 64})
                              .Node("Reshape", {"r", "shape"}, {"y"})
                              .Output("y")
                              .Serialize()),
            "dry");
  EXPECT_EQ(PreparationOf(ConvModel()
                              .Int64Initializer("two", {1}, {2})
                              .Node("Cast", {"r"}, {"i"})
                              .IntAttribute("to", 7)
                              .Node("Div", {"i", "two"}, {"y"})
                              .Output("y", 7)
                              .Serialize()),
            "full");
}

}  // namespace
}  // namespace tessera::test
