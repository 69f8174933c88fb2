#include <gtest/gtest.h>

#include <cmath>

#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// y = sigmoid(relu(x) @ W + b)^2, x: [N,4], W: [4,3], b: [3]. On the testing EP, Relu, MatMul, Add and
// Mul run on the simulated device and Sigmoid falls back to the CPU.
std::string MixedModel() {
  std::vector<float> w(12), b = {0.1f, -0.2f, 0.3f};
  for (int i = 0; i < 12; ++i) w[i] = 0.05f * static_cast<float>(i) - 0.3f;
  return GraphBuilder()
      .Input("x", {-1, 4})
      .FloatInitializer("W", {4, 3}, w)
      .FloatInitializer("b", {3}, b)
      .Node("Relu", {"x"}, {"r"})
      .Node("MatMul", {"r", "W"}, {"m"})
      .Node("Add", {"m", "b"}, {"a"})
      .Node("Sigmoid", {"a"}, {"s"})
      .Node("Mul", {"s", "s"}, {"y"})
      .Output("y")
      .Serialize();
}

std::vector<float> MixedReference(const std::vector<float>& x, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n) * 3);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < 3; ++j) {
      double acc = j == 0 ? 0.1 : j == 1 ? -0.2 : 0.3;
      for (int k = 0; k < 4; ++k) acc += std::max(0.0f, x[i * 4 + k]) * (0.05 * (k * 3 + j) - 0.3);
      const double s = 1.0 / (1.0 + std::exp(-acc));
      y[i * 3 + j] = static_cast<float>(s * s);
    }
  return y;
}

Tensor InputX(int64_t n, float offset = 0) {
  std::vector<float> x(static_cast<size_t>(n) * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) + offset);
  return Tensor::FromVector<float>({n, 4}, x);
}

void ExpectNear(const std::vector<float>& expected, const Tensor& actual) {
  ASSERT_EQ(actual.NumElements(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(actual.Data<float>()[i], expected[i], 1e-5) << i;
}

TEST(SessionTest, RunsOnCpu) {
  const std::string model = MixedModel();
  Session session = MakeSession(model, SessionOptions{}, TestEnv());
  EXPECT_EQ(session.providers(), std::vector<std::string>{"CPUExecutionProvider"});
  Tensor x = InputX(5);
  auto out = session.Run({{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  ExpectNear(MixedReference(x.ToVector<float>(), 5), out[0].tensor());
}

TEST(SessionTest, PartitionsAcrossDevicesAndInsertsCopies) {
  const std::string model = MixedModel();
  Session session = MakeSession(model, OptionsFor("testing"), TestEnv());
  EXPECT_EQ(session.providers(), (std::vector<std::string>{kTestingEpName, "CPUExecutionProvider"}));
  std::map<std::string, std::string> ep_of;
  int copies = 0;
  for (const PartitionEntry& e : session.Partition()) {
    if (e.is_copy)
      ++copies;
    else
      ep_of[e.op_type] = e.ep;
  }
  EXPECT_EQ(ep_of["Relu"], kTestingEpName);
  EXPECT_EQ(ep_of["MatMul"], kTestingEpName);
  EXPECT_EQ(ep_of["Sigmoid"], "CPUExecutionProvider");
  EXPECT_EQ(ep_of["Mul"], kTestingEpName);
  EXPECT_EQ(copies, 3);  // x: feed -> device, a: device -> host for Sigmoid, s: host -> device for Mul
  EXPECT_EQ(session.InputMemoryInfo("x").device_type, DeviceType::kNpu);
  ASSERT_NE(session.InputEpDevice("x"), nullptr);
  EXPECT_EQ(session.InputEpDevice("x")->ep_name, kTestingEpName);
  Tensor x = InputX(7);
  auto out = session.Run({{"x", x}});
  EXPECT_TRUE(out[0].tensor().memory_info().IsHostReadable());
  ExpectNear(MixedReference(x.ToVector<float>(), 7), out[0].tensor());
}

TEST(SessionTest, SelectionPolicyPicksTheSimulatedNpu) {
  const std::string model = MixedModel();
  SessionOptions options;
  options.policy = EpSelectionPolicy::kPreferNpu;
  Session session = MakeSession(model, options, TestEnv());
  EXPECT_EQ(session.providers().front(), kTestingEpName);
  // Where a GPU is present too, Sigmoid runs there: its values cross between the NPU's and the GPU's memories,
  // which no EP copies between directly (through host memory instead).
  Tensor x = InputX(6);
  ExpectNear(MixedReference(x.ToVector<float>(), 6), session.Run({{"x", x}})[0].tensor());
  options.policy = EpSelectionPolicy::kPreferCpu;
  Session cpu_first = MakeSession(model, options, TestEnv());
  EXPECT_EQ(cpu_first.providers().front(), "CPUExecutionProvider");
  options.policy = EpSelectionPolicy::kMaxEfficiency;
  Session efficient = MakeSession(model, options, TestEnv());
  EXPECT_EQ(efficient.providers().front(), kTestingEpName);
}

// SessionOptions::selection_delegate sees every EP device (the CPU EP's last) and the model's metadata, and its
// choice decides the providers; bad choices and exceptions fail creation with clear messages.
TEST(SessionTest, SelectionDelegateChoosesTheProviders) {
  const std::string model = MixedModel();
  SessionOptions options;
  std::vector<std::string> offered;
  std::map<std::string, std::string> metadata;
  size_t most = 0;
  options.selection_delegate = [&](const std::vector<const EpDevice*>& devices,
                                   const std::map<std::string, std::string>& model_metadata,
                                   const std::map<std::string, std::string>& runtime_metadata, size_t max_selections) {
    offered.clear();
    for (const EpDevice* d : devices) offered.push_back(d->ep_name);
    metadata = model_metadata;
    most = max_selections;
    EXPECT_TRUE(runtime_metadata.empty());
    std::vector<const EpDevice*> chosen;
    for (const EpDevice* d : devices)
      if (d->ep_name == kTestingEpName) chosen.push_back(d);
    chosen.push_back(devices.back());
    return chosen;
  };
  Session session = MakeSession(model, options, TestEnv());
  ASSERT_GE(offered.size(), 2u);
  EXPECT_EQ(offered.back(), "CPUExecutionProvider");
  EXPECT_EQ(most, offered.size());
  EXPECT_FALSE(metadata.empty());
  EXPECT_EQ(session.providers().front(), kTestingEpName);
  Tensor x = InputX(5);
  ExpectNear(MixedReference(x.ToVector<float>(), 5), session.Run({{"x", x}})[0].tensor());

  const auto fails_with = [&](EpSelectionDelegate delegate, const std::string& message) {
    SessionOptions bad;
    bad.selection_delegate = std::move(delegate);
    try {
      MakeSession(model, bad, TestEnv());
      ADD_FAILURE() << "no error; expected: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  fails_with([](auto&, auto&, auto&, size_t) -> std::vector<const EpDevice*> { throw std::runtime_error("MY ERROR"); },
             "MY ERROR");
  fails_with([](auto&, auto&, auto&, size_t) { return std::vector<const EpDevice*>{}; }, "selected no EP device");
  fails_with([](const std::vector<const EpDevice*>& d, auto&, auto&, size_t) { return std::vector{d[0], d[0]}; },
             "twice");
  EpDevice stranger;
  fails_with([&](auto&, auto&, auto&, size_t) { return std::vector<const EpDevice*>{&stranger}; },
             "not given");
}

TEST(SessionTest, DisabledCpuFallbackFailsNamingTheNode) {
  const std::string model = MixedModel();
  SessionOptions options = OptionsFor("testing");
  options.disable_cpu_fallback = true;
  try {
    Session session = MakeSession(model, options, TestEnv());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotImplemented);
    EXPECT_NE(std::string(e.what()).find("Sigmoid"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("s_node"), std::string::npos) << e.what();
  }
}

TEST(SessionTest, UnknownProviderAndBadOptionsAreClearErrors) {
  const std::string model = MixedModel();
  SessionOptions unknown;
  unknown.AddProvider("NoSuchExecutionProvider");
  EXPECT_THROW(MakeSession(model, unknown, TestEnv()), Error);
  SessionOptions bad;
  bad.AddProvider(kTestingEpName, {{"no_such_key", "1"}});
  try {
    MakeSession(model, bad, TestEnv());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_key"), std::string::npos) << e.what();
  }
}

TEST(SessionTest, BadInputsAreClearErrorsAndTheSessionStaysUsable) {
  const std::string model = MixedModel();
  Session session = MakeSession(model, OptionsFor("testing"), TestEnv());
  auto expect_error = [&](const Session::NamedValues& feeds, const std::string& part) {
    try {
      session.Run(feeds);
      ADD_FAILURE() << "expected an error containing " << part;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error({}, "'x' was not given");
  expect_error({{"nope", InputX(1)}}, "no input 'nope'");
  expect_error({{"x", Tensor::FromVector<int64_t>({1, 4}, {1, 2, 3, 4})}}, "element type float");
  expect_error({{"x", Tensor::FromVector<float>({1, 3}, {1, 2, 3})}}, "expects shape [N,4]");
  Tensor x = InputX(2);
  ExpectNear(MixedReference(x.ToVector<float>(), 2), session.Run({{"x", x}})[0].tensor());
}

TEST(SessionTest, FoldsConstantsAndRemovesDeadNodes) {
  // c = W + W is constant; d = Relu(x) is dead.
  const std::string model = GraphBuilder()
                                .Input("x", {2})
                                .FloatInitializer("W", {2}, {1.5f, -2.0f})
                                .Node("Add", {"W", "W"}, {"c"})
                                .Node("Relu", {"x"}, {"d"})
                                .Node("Mul", {"x", "c"}, {"y"})
                                .Output("y")
                                .Serialize();
  Session session = MakeSession(model, SessionOptions{}, TestEnv());
  auto steps = session.Partition();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].op_type, "Mul");
  auto out = session.Run({{"x", Tensor::FromVector<float>({2}, {2.0f, 3.0f})}});
  EXPECT_EQ(out[0].tensor().ToVector<float>(), (std::vector<float>{6.0f, -12.0f}));

  SessionOptions none;
  none.optimization_level = OptimizationLevel::kNone;
  Session unoptimized = MakeSession(model, none, TestEnv());
  EXPECT_EQ(unoptimized.Partition().size(), 3u);
  EXPECT_EQ(unoptimized.Run({{"x", Tensor::FromVector<float>({2}, {2.0f, 3.0f})}})[0].tensor().ToVector<float>(),
            (std::vector<float>{6.0f, -12.0f}));
}

TEST(SessionTest, TerminateFlagCancelsTheRun) {
  const std::string model = MixedModel();
  Session session = MakeSession(model, SessionOptions{}, TestEnv());
  RunOptions options;
  options.terminate = true;
  try {
    session.Run({{"x", InputX(1)}}, {}, options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTerminated);
  }
  EXPECT_NO_THROW(session.Run({{"x", InputX(1)}}));
}

TEST(SessionTest, InitializerOverridesReplaceWeightsAndAreChecked) {
  const std::string model = GraphBuilder()
                                .Input("x", {2})
                                .FloatInitializer("w", {2}, {1.0f, 1.0f})
                                .Node("Mul", {"x", "w"}, {"y"})
                                .Output("y")
                                .Serialize();
  SessionOptions options;
  options.initializers["w"] = Tensor::FromVector<float>({2}, {3.0f, -2.0f});
  Session session = MakeSession(model, options, TestEnv());
  EXPECT_EQ(session.Run({{"x", Tensor::FromVector<float>({2}, {2.0f, 5.0f})}})[0].tensor().ToVector<float>(),
            (std::vector<float>{6.0f, -10.0f}));
  const auto expect_failure = [&](const std::string& name, const Tensor& value, const std::string& message) {
    SessionOptions bad;
    bad.initializers[name] = value;
    try {
      MakeSession(model, bad, TestEnv());
      ADD_FAILURE() << name << " must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  expect_failure("v", Tensor::FromVector<float>({2}, {1, 2}), "initializer 'v': the model has no initializer");
  expect_failure("w", Tensor::FromVector<float>({3}, {1, 2, 3}), "the model's is");
  expect_failure("w", Tensor::FromVector<int64_t>({2}, {1, 2}), "the model's is");
}

TEST(SessionTest, MalformedModelBytesFailWithInvalidModel) {
  const std::string garbage = "this is not an onnx model";
  try {
    MakeSession(garbage, SessionOptions{}, TestEnv());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  }
}

// Metadata without a session (onnxruntime's get_compatibility_info_from_model reads it so): the model is still checked.
TEST(SessionTest, ReadModelMetadataWithoutASession) {
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(GraphBuilder().Input("x", {2}).Node("NoSuchOp", {"x"}, {"y"}).Output("y").Serialize()));
  proto.set_producer_name("meta-test");
  auto* entry = proto.add_metadata_props();
  entry->set_key("ep_compatibility_info.SomeEP");
  entry->set_value("v1");
  const std::string bytes = proto.SerializeAsString();
  const ModelMetadata md = ReadModelMetadata(bytes.data(), bytes.size());  // an op no EP has: no session could run it
  EXPECT_EQ(md.producer_name, "meta-test");
  EXPECT_EQ(md.custom.at("ep_compatibility_info.SomeEP"), "v1");
  const std::string garbage = "this is not an onnx model";
  try {
    ReadModelMetadata(garbage.data(), garbage.size());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  }
  EXPECT_THROW(ReadModelMetadata(std::filesystem::path("/nonexistent/model.onnx")), Error);
}

TEST(SessionTest, MissingOpIsNamedWithDomainOpsetAndNode) {
  GraphBuilder b;
  b.Input("x", {2}).Node("NoSuchOp", {"x"}, {"y"}, "mystery").Output("y");
  try {
    MakeSession(b.Serialize(), SessionOptions{}, TestEnv());
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kNotImplemented);
    EXPECT_NE(what.find("NoSuchOp"), std::string::npos) << what;
    EXPECT_NE(what.find("opset 17"), std::string::npos) << what;
    EXPECT_NE(what.find("mystery"), std::string::npos) << what;
    EXPECT_NE(what.find("ai.onnx"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tessera::test
