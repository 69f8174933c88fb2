// Step graphs (src/providers/cuda/step_graphs.h): eager sessions capture a step's library calls (cuDNN
// convolutions, cuBLASLt products) into a CUDA graph the second time the step sees the same buffers on the same
// stream, and replay that graph afterwards. Each test exercises a way a replay could read stale data or write to
// the wrong place: new values in the same buffers (host feeds staged into the same device blocks, IO binding
// with inputs updated in place), buffers that move (new bindings), a new input shape, concurrent runs on stream
// sets of their own, a user_compute_stream. Results must equal, bit for bit, those of a session that queues every
// call directly (step_graphs = 0): both use cuDNN's heuristic choice and no TF32, so they run the same kernels.
// The verbose log says when a step graph is captured, which shows that replays really happened.
#include <cuda_runtime_api.h>

#include <sstream>

#include "cuda/cuda_test_util.h"
#include "threads_at_once.h"
#include "unit/graph/passes/attention_graphs.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaStepGraphsTest = CudaTest;

// Step graphs are what eager runs use: automatic whole-run graphs (on by default) are off here.
ProviderOptions Options(bool step_graphs) {
  return {{"step_graphs", step_graphs ? "1" : "0"},
          {"automatic_cuda_graphs", "0"},
          {"use_tf32", "0"},
          {"cudnn_conv_algo_search", "HEURISTIC"}};
}

// `prepare`: the preparation runs at creation (session.prepare_static_shapes), off unless a test is about them,
// so that captures and replays happen in the runs a test makes.
Session MakeCudaSession(const std::string& model, const ProviderOptions& provider_options, bool prepare = false) {
  SessionOptions options;
  options.log_level = LogLevel::kVerbose;  // "step graph captured"
  options.config["session.prepare_static_shapes"] = prepare ? "1" : "0";
  options.AddProvider(kCudaEpName, provider_options);
  return MakeSession(model, options, TestEnv());
}

// SmallConvNetModel with a dynamic batch: x [N, 3, 16, 16].
std::string DynamicBatchConvNet() {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(SmallConvNetModel())) throw std::runtime_error("cannot parse the built model");
  auto* dim = proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
  dim->set_dim_param("N");
  return proto.SerializeAsString();
}

Tensor Input(uint32_t seed, int64_t batch = 1) {
  return RandomTensor(DataType::kFloat, {batch, 3, 16, 16}, seed, -1.0, 1.0);
}

// Lines of the verbose log saying a step graph was captured (for a node whose description contains `op`).
size_t CountCaptures(const std::string& log, const std::string& op = "") {
  size_t count = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("step graph captured") != std::string::npos && line.find(op) != std::string::npos) ++count;
  return count;
}

std::vector<float> RunFeeds(Session& session, const Tensor& x) {
  return session.Run({{"x", Value(x)}})[0].tensor().ToVector<float>();
}

TEST_F(CudaStepGraphsTest, HostFeedsReplayWithNewValuesInTheSameBuffers) {
  const std::string model = SmallConvNetModel();
  Session direct = MakeCudaSession(model, Options(false));
  Session stepped = MakeCudaSession(model, Options(true));
  ::testing::internal::CaptureStderr();
  for (uint32_t run = 0; run < 6; ++run) {  // direct, capture, then replays: every run with new input values
    const Tensor x = Input(10 + run);
    EXPECT_EQ(RunFeeds(stepped, x), RunFeeds(direct, x)) << "run " << run;
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  // The convolutions and the Gemm (at least two of them see the same buffers run after run).
  EXPECT_GE(CountCaptures(log), 2u) << log.substr(0, 4000);
}

// A session with static input shapes runs its preparation at creation (session.prepare_static_shapes) through
// Run(feeds)'s own path: the second preparation run captures the step graphs for the buffers host-feed runs get,
// so the caller's first runs replay them (no capture, no direct cuDNN call) and equal a direct session's.
TEST_F(CudaStepGraphsTest, PreparedSessionsReplayFromTheFirstRun) {
  const std::string model = SmallConvNetModel();
  Session direct = MakeCudaSession(model, Options(false));
  ::testing::internal::CaptureStderr();
  Session stepped = MakeCudaSession(model, Options(true), /*prepare=*/true);
  const std::string creation_log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(CountCaptures(creation_log), 2u) << creation_log.substr(0, 4000);
  ::testing::internal::CaptureStderr();
  for (uint32_t run = 0; run < 3; ++run) {
    const Tensor x = Input(20 + run);
    EXPECT_EQ(RunFeeds(stepped, x), RunFeeds(direct, x)) << "run " << run;
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountCaptures(log), 0u) << log.substr(0, 4000);
}

TEST_F(CudaStepGraphsTest, DisabledByTheOptionAndInGraphSessions) {
  const std::string model = SmallConvNetModel();
  ProviderOptions graphs = Options(true);
  graphs["enable_cuda_graph"] = "1";
  for (const ProviderOptions& options : {Options(false), graphs}) {
    Session session = MakeCudaSession(model, options);
    ::testing::internal::CaptureStderr();
    for (uint32_t run = 0; run < 4; ++run) RunFeeds(session, Input(run));
    EXPECT_EQ(CountCaptures(::testing::internal::GetCapturedStderr()), 0u);
  }
}

TEST_F(CudaStepGraphsTest, IoBindingUpdatedInPlaceAndRebound) {
  const std::string model = SmallConvNetModel();
  Session direct = MakeCudaSession(model, Options(false));
  Session stepped = MakeCudaSession(model, Options(true));
  Tensor input = ToCuda(Input(1));
  Tensor output = Tensor::Allocate(DataType::kFloat, {1, 10}, CudaDeviceAllocator());
  IoBinding binding = stepped.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("prob", output);
  for (uint32_t run = 0; run < 9; ++run) {
    const Tensor x = Input(40 + run);
    if (run == 5) {  // the input and output move: new keys, captured anew, while the old graphs stay cached
      input = ToCuda(x);
      output = Tensor::Allocate(DataType::kFloat, {1, 10}, CudaDeviceAllocator());
      binding.BindInput("x", input);
      binding.BindOutput("prob", output);
    } else {
      TestEnv().CopyTensors({&x, 1}, {&input, 1}, nullptr);
    }
    stepped.Run(binding);
    EXPECT_EQ(ToHost(output).ToVector<float>(), RunFeeds(direct, x)) << "run " << run;
  }
}

TEST_F(CudaStepGraphsTest, NewInputShapeAfterReplays) {
  const std::string model = DynamicBatchConvNet();
  Session direct = MakeCudaSession(model, Options(false));
  Session stepped = MakeCudaSession(model, Options(true));
  const int64_t batches[] = {1, 1, 1, 1, 3, 3, 3, 1, 3, 1};
  for (size_t run = 0; run < std::size(batches); ++run) {
    const Tensor x = Input(70 + static_cast<uint32_t>(run), batches[run]);
    EXPECT_EQ(RunFeeds(stepped, x), RunFeeds(direct, x)) << "run " << run << ", batch " << batches[run];
  }
}

TEST_F(CudaStepGraphsTest, ConcurrentRunsEachReplayTheirOwnGraphs) {
  constexpr int kThreads = 4, kRuns = 8;
  const std::string model = SmallConvNetModel();
  Session direct = MakeCudaSession(model, Options(false));
  std::vector<std::vector<std::vector<float>>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int r = 0; r < kRuns; ++r) expected[t].push_back(RunFeeds(direct, Input(100 * t + r)));
  Session stepped = MakeCudaSession(model, Options(true));
  const std::vector<std::string> failures =
      RunOnThreadsAtOnce(kThreads, [&](int t, const std::function<void()>& released) -> std::string {
        released();
        std::string failure;
        for (int r = 0; r < kRuns; ++r)
          if (RunFeeds(stepped, Input(100 * t + r)) != expected[t][r])
            failure = "run " + std::to_string(r) + " differs from the direct session";
        return failure;
      });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

// ai.tessera::Attention is one launch replayed from a step graph: inputs bound on the device once and updated in
// place with new values every run, the output bound to one device buffer.
TEST_F(CudaStepGraphsTest, AttentionReplaysWithNewValues) {
  AttentionSpec spec;
  spec.seq = 77;
  spec.heads = 2;
  spec.head = 96;
  spec.mask = true;
  const PassTestGraph g = AttentionGraph(spec);
  const std::string model = g.Serialize();
  Session direct = MakeCudaSession(model, Options(false));
  Session stepped = MakeCudaSession(model, Options(true));
  const Session::NamedValues base = g.Feeds(2);
  const std::string output_name = stepped.outputs()[0].name;
  const Shape output_shape = direct.Run(base)[0].tensor().shape();
  Tensor output = Tensor::Allocate(DataType::kFloat, output_shape, CudaDeviceAllocator());
  std::vector<Tensor> inputs;
  IoBinding binding = stepped.CreateIoBinding();
  for (const auto& [name, value] : base) {
    inputs.push_back(ToCuda(value.tensor()));
    binding.BindInput(name, inputs.back());
  }
  binding.BindOutput(output_name, output);
  ::testing::internal::CaptureStderr();
  for (int run = 0; run < 5; ++run) {
    Session::NamedValues feeds;
    for (size_t i = 0; i < base.size(); ++i) {  // different values every run, same shapes and buffers
      std::vector<float> v = base[i].second.tensor().ToVector<float>();
      for (float& x : v) x *= 1.0f + 0.25f * static_cast<float>(run);
      const Tensor host = Tensor::FromVector<float>(base[i].second.tensor().shape(), v);
      TestEnv().CopyTensors({&host, 1}, {&inputs[i], 1}, nullptr);
      feeds.push_back({base[i].first, Value(host)});
    }
    stepped.Run(binding);
    EXPECT_EQ(ToHost(output).ToVector<float>(), direct.Run(feeds)[0].tensor().ToVector<float>()) << "run " << run;
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountCaptures(log, "Attention"), 1u) << log.substr(0, 4000);
}

TEST_F(CudaStepGraphsTest, UserComputeStream) {
  cudaStream_t user = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking), cudaSuccess);
  {
    const std::string model = SmallConvNetModel();
    Session direct = MakeCudaSession(model, Options(false));
    ProviderOptions on_user_stream = Options(true);
    on_user_stream["user_compute_stream"] = std::to_string(reinterpret_cast<uintptr_t>(user));
    Session stepped = MakeCudaSession(model, on_user_stream);
    ::testing::internal::CaptureStderr();
    for (uint32_t run = 0; run < 5; ++run) {
      const Tensor x = Input(200 + run);
      EXPECT_EQ(RunFeeds(stepped, x), RunFeeds(direct, x)) << "run " << run;
    }
    EXPECT_GE(CountCaptures(::testing::internal::GetCapturedStderr()), 2u);
  }
  cudaStreamDestroy(user);
}

}  // namespace
}  // namespace tessera::test
