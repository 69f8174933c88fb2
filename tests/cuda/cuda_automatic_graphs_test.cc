// Automatic CUDA graphs (automatic_cuda_graphs, on by default; src/session/automatic_graphs.h): the session
// captures Run(feeds) and IoBinding runs at any address into CUDA graphs by itself and replays them. Each test
// exercises a way a replay could read stale data or write to the wrong place: new host values every run, device
// inputs updated in place or rebound, new input shapes, outputs held across runs, concurrent runs on stream sets
// of their own, two sessions on one user_compute_stream. Results must equal, bit for bit, those of an eager
// session (automatic_cuda_graphs = 0, step_graphs = 0): both use cuDNN's heuristic choice and no TF32, so they run
// the same kernels.
#include <cuda_runtime_api.h>

#include "cuda/cuda_test_util.h"
#include "threads_at_once.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaAutomaticGraphsTest = CudaTest;

ProviderOptions Options(bool automatic) {
  return {{"automatic_cuda_graphs", automatic ? "1" : "0"},
          {"step_graphs", "0"},
          {"use_tf32", "0"},
          {"cudnn_conv_algo_search", "HEURISTIC"}};
}

// `prepare`: the preparation runs at creation, off unless a test is about them, so that the warm-up, the capture
// and the replays happen in the runs a test makes.
Session MakeCudaSession(const std::string& model, const ProviderOptions& provider_options, bool prepare = false) {
  SessionOptions options;
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

std::vector<float> RunFeeds(Session& session, const Tensor& x) {
  return session.Run({{"x", Value(x)}})[0].tensor().ToVector<float>();
}

TEST_F(CudaAutomaticGraphsTest, HostFeedsReplayWithNewValues) {
  const std::string model = SmallConvNetModel();
  Session eager = MakeCudaSession(model, Options(false));
  Session graphed = MakeCudaSession(model, Options(true));
  EXPECT_EQ(graphed.GraphStatus().rfind("automatic:", 0), 0u) << graphed.GraphStatus();
  EXPECT_EQ(eager.GraphStatus().rfind("eager:", 0), 0u) << eager.GraphStatus();
  for (uint32_t run = 0; run < 6; ++run) {  // warm-up, capture + replay, replays: new input values every run
    const Tensor x = Input(10 + run);
    EXPECT_EQ(RunFeeds(graphed, x), RunFeeds(eager, x)) << "run " << run;
  }
  EXPECT_EQ(graphed.AutomaticGraphCaptures(), 1u);
  EXPECT_EQ(graphed.AutomaticGraphReplays(), 5u);
}

// A decoder's shape: one input per layer read first at that layer, one output per layer written there and read by
// the next (like GPT-2's past and present key/values), 1 MB each, new values every run: each replay returns this
// run's values.
TEST_F(CudaAutomaticGraphsTest, LayerInputsAndOutputsOfADecoderReplayExactly) {
  constexpr int kLayers = 6;
  GraphBuilder builder;
  builder.Input("x", {256, 1024});
  std::string h = "x";
  for (int i = 0; i < kLayers; ++i) {
    const std::string past = "past" + std::to_string(i), present = "present" + std::to_string(i);
    builder.Input(past, {256, 1024})
        .Node("Mul", {h, past}, {"m" + std::to_string(i)})
        .Node("Add", {"m" + std::to_string(i), past}, {"s" + std::to_string(i)})
        .Node("Relu", {"s" + std::to_string(i)}, {present})
        .Output(present);
    h = present;
  }
  builder.Node("Sigmoid", {h}, {"logits"}).Output("logits");
  const std::string model = builder.Serialize();
  Session eager = MakeCudaSession(model, Options(false));
  Session graphed = MakeCudaSession(model, Options(true));
  EXPECT_EQ(graphed.GraphStatus().rfind("automatic:", 0), 0u) << graphed.GraphStatus();
  for (uint32_t run = 0; run < 8; ++run) {
    std::vector<std::pair<std::string, Value>> feeds{
        {"x", Value(RandomTensor(DataType::kFloat, {256, 1024}, 100 * run, -1.0, 1.0))}};
    for (int i = 0; i < kLayers; ++i)
      feeds.push_back({"past" + std::to_string(i),
                       Value(RandomTensor(DataType::kFloat, {256, 1024}, 100 * run + 1 + i, -1.0, 1.0))});
    const std::vector<Value> expected = eager.Run(feeds), got = graphed.Run(feeds);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_EQ(got[k].tensor().ToVector<float>(), expected[k].tensor().ToVector<float>())
          << "run " << run << ", output " << k;
  }
  EXPECT_EQ(graphed.AutomaticGraphCaptures(), 1u);
  EXPECT_EQ(graphed.AutomaticGraphReplays(), 7u);
}

// Static shapes and the default options: the preparation runs at creation capture the graph, so the caller's
// first run replays it.
TEST_F(CudaAutomaticGraphsTest, PreparedSessionsReplayFromTheFirstRun) {
  const std::string model = SmallConvNetModel();
  Session eager = MakeCudaSession(model, Options(false));
  Session graphed = MakeCudaSession(model, Options(true), /*prepare=*/true);
  EXPECT_EQ(graphed.AutomaticGraphCaptures(), 1u);
  const size_t replays = graphed.AutomaticGraphReplays();
  for (uint32_t run = 0; run < 3; ++run) {
    const Tensor x = Input(20 + run);
    EXPECT_EQ(RunFeeds(graphed, x), RunFeeds(eager, x)) << "run " << run;
  }
  EXPECT_EQ(graphed.AutomaticGraphReplays(), replays + 3);
  EXPECT_EQ(graphed.AutomaticGraphCaptures(), 1u);
}

TEST_F(CudaAutomaticGraphsTest, IoBindingUpdatedInPlaceAndRebound) {
  const std::string model = SmallConvNetModel();
  Session eager = MakeCudaSession(model, Options(false));
  Session graphed = MakeCudaSession(model, Options(true));
  Tensor input = ToCuda(Input(1));
  Tensor output = Tensor::Allocate(DataType::kFloat, {1, 10}, CudaDeviceAllocator());
  IoBinding binding = graphed.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("prob", output);
  for (uint32_t run = 0; run < 9; ++run) {
    const Tensor x = Input(40 + run);
    if (run >= 5) {  // the input and output move every run: the same graph, fed and read by copies
      input = ToCuda(x);
      output = Tensor::Allocate(DataType::kFloat, {1, 10}, CudaDeviceAllocator());
      binding.BindInput("x", input);
      binding.BindOutput("prob", output);
    } else {
      TestEnv().CopyTensors({&x, 1}, {&input, 1}, nullptr);
    }
    graphed.Run(binding);
    EXPECT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), output.raw_data());
    EXPECT_EQ(ToHost(output).ToVector<float>(), RunFeeds(eager, x)) << "run " << run;
  }
  EXPECT_EQ(graphed.AutomaticGraphCaptures(), 1u);
}

// Six bound device inputs and six outputs (two bound to preallocated tensors, four to device memory): the inputs go
// into the graph's buffers, and the outputs out of them, as batched copies; every run's values arrive where bound.
TEST_F(CudaAutomaticGraphsTest, ManyBoundInputsAndOutputsAreCopiedExactly) {
  constexpr int kCount = 6;
  GraphBuilder builder;
  for (int i = 0; i < kCount; ++i) builder.Input("a" + std::to_string(i), {2, 5 + i});
  for (int i = 0; i < kCount; ++i) {
    const std::string a = "a" + std::to_string(i);
    builder.Node("Relu", {a}, {"r" + std::to_string(i)}).Node("Add", {"r" + std::to_string(i), a}, {"y" + std::to_string(i)});
    builder.Output("y" + std::to_string(i));
  }
  const std::string model = builder.Serialize();
  Session graphed = MakeCudaSession(model, Options(true));
  IoBinding binding = graphed.CreateIoBinding();
  std::vector<Tensor> preallocated = {Tensor::Allocate(DataType::kFloat, {2, 5}, CudaDeviceAllocator()),
                                      Tensor::Allocate(DataType::kFloat, {2, 6}, CudaDeviceAllocator())};
  binding.BindOutput("y0", preallocated[0]);
  binding.BindOutput("y1", preallocated[1]);
  for (int i = 2; i < kCount; ++i) binding.BindOutput("y" + std::to_string(i), CudaDevice().device_memory);
  for (uint32_t run = 0; run < 5; ++run) {
    std::vector<Tensor> hosts;
    for (int i = 0; i < kCount; ++i) {
      hosts.push_back(RandomTensor(DataType::kFloat, {2, 5 + i}, 500 + 10 * run + i, -1.0, 1.0));
      binding.BindInput("a" + std::to_string(i), ToCuda(hosts.back()));  // new addresses every run
    }
    graphed.Run(binding);
    const std::vector<Value> outputs = binding.BoundOutputs();
    ASSERT_EQ(outputs.size(), static_cast<size_t>(kCount));
    for (int i = 0; i < kCount; ++i) {
      std::vector<float> expected = hosts[i].ToVector<float>();
      for (float& v : expected) v = std::max(v, 0.0f) + v;
      EXPECT_EQ(ToHost(outputs[i].tensor()).ToVector<float>(), expected) << "run " << run << ", y" << i;
    }
    EXPECT_EQ(outputs[0].tensor().raw_data(), preallocated[0].raw_data());
  }
  EXPECT_EQ(graphed.AutomaticGraphCaptures(), 1u);
}

// Outputs are copies: what the caller holds (host tensors of Run(feeds), device tensors of IoBinding runs bound
// to device memory) keeps its values through later replays.
TEST_F(CudaAutomaticGraphsTest, OutputsHeldAcrossRunsKeepTheirValues) {
  const std::string model = SmallConvNetModel();
  Session eager = MakeCudaSession(model, Options(false));
  Session graphed = MakeCudaSession(model, Options(true));
  IoBinding binding = graphed.CreateIoBinding();
  binding.BindOutput("prob", CudaDevice().device_memory);
  std::vector<Tensor> inputs, held_host, held_device;
  for (uint32_t run = 0; run < 5; ++run) {
    inputs.push_back(Input(300 + run));
    held_host.push_back(graphed.Run({{"x", Value(inputs.back())}})[0].tensor());
    binding.BindInput("x", ToCuda(inputs.back()));
    graphed.Run(binding);
    held_device.push_back(binding.BoundOutputs()[0].tensor());
  }
  for (size_t run = 0; run < inputs.size(); ++run) {
    const std::vector<float> expected = RunFeeds(eager, inputs[run]);
    EXPECT_EQ(held_host[run].ToVector<float>(), expected) << "Run(feeds), run " << run;
    EXPECT_EQ(ToHost(held_device[run]).ToVector<float>(), expected) << "IoBinding, run " << run;
  }
}

TEST_F(CudaAutomaticGraphsTest, NewInputShapesGetTheirOwnGraphs) {
  const std::string model = DynamicBatchConvNet();
  Session eager = MakeCudaSession(model, Options(false));
  ProviderOptions limited = Options(true);
  limited["automatic_cuda_graph_limit"] = "2";
  Session graphed = MakeCudaSession(model, limited);
  const int64_t batches[] = {1, 1, 1, 1, 3, 3, 3, 2, 2, 2, 1, 3, 1};
  for (size_t run = 0; run < std::size(batches); ++run) {
    const Tensor x = Input(70 + static_cast<uint32_t>(run), batches[run]);
    EXPECT_EQ(RunFeeds(graphed, x), RunFeeds(eager, x)) << "run " << run << ", batch " << batches[run];
  }
  // 1, 3 and 2 captured; 2 released 1 (limit 2), which came back and was captured again, releasing 3, which
  // came back too.
  EXPECT_EQ(graphed.AutomaticGraphCaptures(), 5u);
}

TEST_F(CudaAutomaticGraphsTest, ConcurrentRunsEachReplayTheirOwnGraphs) {
  constexpr int kThreads = 4, kRuns = 10;
  const std::string model = SmallConvNetModel();
  Session eager = MakeCudaSession(model, Options(false));
  std::vector<std::vector<std::vector<float>>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int r = 0; r < kRuns; ++r) expected[t].push_back(RunFeeds(eager, Input(100 * t + r)));
  Session graphed = MakeCudaSession(model, Options(true));
  const std::vector<std::string> failures =
      RunOnThreadsAtOnce(kThreads, [&](int t, const std::function<void()>& released) -> std::string {
        released();
        std::string failure;
        for (int r = 0; r < kRuns; ++r) {
          std::vector<float> got;
          if (r % 2 == 0) {
            got = RunFeeds(graphed, Input(100 * t + r));
          } else {
            IoBinding binding = graphed.CreateIoBinding();
            binding.BindInput("x", ToCuda(Input(100 * t + r)));
            binding.BindOutput("prob", CudaDevice().device_memory);
            graphed.Run(binding);
            got = ToHost(binding.BoundOutputs()[0].tensor()).ToVector<float>();
          }
          if (got != expected[t][r]) failure = "run " + std::to_string(r) + " differs from the eager session";
        }
        return failure;
      });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_GE(graphed.AutomaticGraphReplays(), 20u);
}

// Two sessions of one model on the application's stream, runs interleaved with different inputs: each replays
// its own graph with its own buffers.
TEST_F(CudaAutomaticGraphsTest, TwoSessionsOnOneUserComputeStream) {
  cudaStream_t user = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking), cudaSuccess);
  {
    const std::string model = SmallConvNetModel();
    Session eager = MakeCudaSession(model, Options(false));
    ProviderOptions on_user_stream = Options(true);
    on_user_stream["user_compute_stream"] = std::to_string(reinterpret_cast<uintptr_t>(user));
    Session a = MakeCudaSession(model, on_user_stream);
    Session b = MakeCudaSession(model, on_user_stream);
    for (uint32_t run = 0; run < 5; ++run) {
      const Tensor xa = Input(200 + run), xb = Input(500 + run);
      const std::vector<float> ya = RunFeeds(a, xa), yb = RunFeeds(b, xb);
      EXPECT_EQ(ya, RunFeeds(eager, xa)) << "session a, run " << run;
      EXPECT_EQ(yb, RunFeeds(eager, xb)) << "session b, run " << run;
    }
    EXPECT_EQ(a.AutomaticGraphCaptures(), 1u);
    EXPECT_EQ(b.AutomaticGraphCaptures(), 1u);
  }
  cudaStreamDestroy(user);
}

// Models a graph cannot hold run eagerly, and GraphStatus says why.
TEST_F(CudaAutomaticGraphsTest, ModelsAGraphCannotHoldSayWhy) {
  // TopK has no CUDA kernel: it runs on the CPU between CUDA nodes.
  const std::string with_cpu_node = GraphBuilder()
                                        .Input("x", {2, 8})
                                        .Int64Initializer("k", {1}, {3})
                                        .Node("Relu", {"x"}, {"r"})
                                        .Node("TopK", {"r", "k"}, {"values", "indices"})
                                        .Node("Relu", {"values"}, {"y"})
                                        .Output("y")
                                        .Serialize();
  Session session = MakeCudaSession(with_cpu_node, Options(true));
  EXPECT_EQ(session.GraphStatus().rfind("eager:", 0), 0u) << session.GraphStatus();
  const Tensor x = RandomTensor(DataType::kFloat, {2, 8}, 3, -1.0, 1.0);
  for (int run = 0; run < 3; ++run) EXPECT_EQ(session.Run({{"x", Value(x)}})[0].tensor().shape(), Shape({2, 3}));
  EXPECT_EQ(session.AutomaticGraphCaptures(), 0u);
}

}  // namespace
}  // namespace tessera::test
