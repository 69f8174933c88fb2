// CUDA graphs (enable_cuda_graph = 1): capture after a warm-up run, replay with inputs updated in place,
// several graphs per session by gpu_graph_id, and models that cannot be captured rejected at creation.
// Outputs are compared with a session on the same GPU without graphs (TF32 off in both, so that the
// two runs differ by rounding at most).
#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaGraphTest = CudaTest;

constexpr double kTolerance = 1e-5;
const Shape kInputShape{1, 3, 16, 16};

SessionOptions CudaOptions(bool graphs) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"enable_cuda_graph", graphs ? "1" : "0"}, {"use_tf32", "0"}});
  return options;
}

void UpdateInPlace(Tensor& device_tensor, const Tensor& host) {
  TestEnv().CopyTensors({&host, 1}, {&device_tensor, 1}, nullptr);
}

class Reference {
 public:
  explicit Reference(const std::string& model) : session_(MakeSession(model, CudaOptions(false), TestEnv())) {}
  Tensor Run(const Tensor& x) { return session_.Run({{"x", x}})[0].tensor(); }

 private:
  Session session_;
};

TEST_F(CudaGraphTest, ReplaysWithInputsUpdatedInPlaceAndMatchesRunsWithoutGraphs) {
  const std::string model = SmallConvNetModel();
  Session session = MakeSession(model, CudaOptions(true), TestEnv());
  Reference reference(model);
  Tensor input = ToCuda(RandomTensor(DataType::kFloat, kInputShape, 1));
  Tensor output = Tensor::Allocate(DataType::kFloat, {1, 10}, CudaDeviceAllocator());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("prob", output);
  for (uint32_t run = 0; run < 5; ++run) {  // warm-up, capture + replay, then replays
    const Tensor x = RandomTensor(DataType::kFloat, kInputShape, 100 + run);
    UpdateInPlace(input, x);
    session.Run(binding);
    ASSERT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), output.raw_data());
    EXPECT_EQ(CompareTensors(reference.Run(x), ToHost(output), kTolerance, kTolerance), "") << "run " << run;
  }
}

TEST_F(CudaGraphTest, SeveralGraphIdsAndRunsWithoutAGraph) {
  const std::string model = SmallConvNetModel();
  Session session = MakeSession(model, CudaOptions(true), TestEnv());
  Reference reference(model);
  const Tensor a = RandomTensor(DataType::kFloat, kInputShape, 7);
  const Tensor b = RandomTensor(DataType::kFloat, kInputShape, 8);
  const Tensor expected_a = reference.Run(a), expected_b = reference.Run(b);
  IoBinding binding_a = session.CreateIoBinding(), binding_b = session.CreateIoBinding();
  binding_a.BindInput("x", ToCuda(a));
  binding_a.BindOutput("prob", CudaDevice().device_memory);
  binding_b.BindInput("x", ToCuda(b));
  binding_b.BindOutput("prob", CudaDevice().device_memory);
  RunOptions key1, key2, no_graph;
  key1.config["gpu_graph_id"] = "1";
  key2.config["gpu_graph_id"] = "2";
  no_graph.config["gpu_graph_id"] = "-1";
  for (int run = 0; run < 4; ++run) {
    session.Run(binding_a, key1);
    session.Run(binding_b, key2);
    // Graph 2's replay must not have touched graph 1's output (workspaces are not reused for tensors).
    EXPECT_EQ(CompareTensors(expected_a, ToHost(binding_a.BoundOutputs()[0].tensor()), kTolerance, kTolerance), "")
        << "graph 1, run " << run;
    EXPECT_EQ(CompareTensors(expected_b, ToHost(binding_b.BoundOutputs()[0].tensor()), kTolerance, kTolerance), "")
        << "graph 2, run " << run;
  }
  IoBinding other = session.CreateIoBinding();
  other.BindInput("x", ToCuda(a));
  other.BindOutput("prob", MemoryInfo::Host());
  session.Run(other, no_graph);
  EXPECT_EQ(CompareTensors(expected_a, other.BoundOutputs()[0].tensor(), kTolerance, kTolerance), "");
}

TEST_F(CudaGraphTest, ModelWithACpuNodeIsRejectedAtSessionCreation) {
  const std::string model = GraphBuilder()
                                .Input("x", {2, 4})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Sin", {"r"}, {"s"})  // no CUDA kernel: runs on the CPU
                                .Node("Sigmoid", {"s"}, {"y"})
                                .Output("y")
                                .Serialize();
  try {
    MakeSession(model, CudaOptions(true), TestEnv());
    FAIL() << "expected the session to refuse graph capture";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotImplemented) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot be captured"), std::string::npos) << e.what();
  }
  // Without graphs the same model runs, with the CPU fallback.
  EXPECT_NO_THROW(MakeSession(model, CudaOptions(false), TestEnv()));
}

// Shape arithmetic on the CPU feeding the device (exporters' BERT: Shape -> Gather -> Add -> Gather indices):
// the CUDA Gather reads the CPU-computed indices on the host (no copy), and the graph captures.
TEST_F(CudaGraphTest, HostShapeArithmeticFeedingGatherIndicesIsCaptured) {
  const std::string model = GraphBuilder()
                                .Input("x", {5, 2})
                                .Int64Initializer("one", {2}, {1, 1})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Shape", {"r"}, {"s"})
                                .Node("Sub", {"s", "one"}, {"last"})  // int64 Sub: CPU only -> rows [4, 1]
                                .Node("Gather", {"r", "last"}, {"y"}, "pick")
                                .Output("y")
                                .Serialize();
  for (const bool graphs : {false, true}) {
    Session session = MakeSession(model, CudaOptions(graphs), TestEnv());
    for (const PartitionEntry& e : session.Partition()) {
      EXPECT_FALSE(e.is_copy && e.copy_from.rfind("feed", 0) != 0) << e.copy_from << " -> " << e.copy_to;
      if (e.node_name == "pick") {
        EXPECT_EQ(e.ep, "CUDAExecutionProvider");
      }
    }
    Tensor input = ToCuda(RandomTensor(DataType::kFloat, {5, 2}, 1));
    IoBinding binding = session.CreateIoBinding();
    binding.BindInput("x", input);
    binding.BindOutput("y", CudaDevice().device_memory);
    for (uint32_t run = 0; run < 4; ++run) {
      const Tensor x = RandomTensor(DataType::kFloat, {5, 2}, 10 + run, -1.0, 1.0);
      UpdateInPlace(input, x);
      session.Run(binding);
      const std::vector<float> v = x.ToVector<float>();
      const std::vector<float> expected = {std::max(v[8], 0.0f), std::max(v[9], 0.0f), std::max(v[2], 0.0f),
                                           std::max(v[3], 0.0f)};
      const Tensor y = ToHost(binding.BoundOutputs()[0].tensor());
      EXPECT_EQ(y.shape(), Shape({2, 2}));
      EXPECT_EQ(y.ToVector<float>(), expected) << "graphs " << graphs << " run " << run;
    }
  }
}

// A transformer-style block (MatMul with batch broadcasting, LayerNormalization, Gelu, Softmax) captured
// in float16: cuBLAS and the own kernels replay correctly.
TEST_F(CudaGraphTest, TransformerBlockInFloat16) {
  GraphBuilder builder(20);  // Gelu is opset 20
  const Tensor w = RandomTensor(DataType::kFloat16, {32, 32}, 3, -0.2, 0.2);
  const Tensor gamma = RandomTensor(DataType::kFloat16, {32}, 4, 0.5, 1.5);
  const Tensor beta = RandomTensor(DataType::kFloat16, {32}, 5);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(builder.Input("x", {2, 8, 32}, 10)
                                        .Node("MatMul", {"x", "w"}, {"h"})
                                        .Node("LayerNormalization", {"h", "gamma", "beta"}, {"n"})
                                        .Node("Gelu", {"n"}, {"g"})
                                        .Node("Softmax", {"g"}, {"y"})
                                        .Output("y", 10)
                                        .Serialize()));
  auto add_initializer = [&](const std::string& name, const Tensor& t) {
    onnx::TensorProto* init = proto.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(static_cast<int>(DataType::kFloat16));
    for (int64_t d : t.shape().dims()) init->add_dims(d);
    init->set_raw_data(t.raw_data(), t.SizeInBytes());
  };
  add_initializer("w", w);
  add_initializer("gamma", gamma);
  add_initializer("beta", beta);
  const std::string model = proto.SerializeAsString();
  ExpectAllOnCuda(model);
  Session session = MakeSession(model, CudaOptions(true), TestEnv());
  Reference reference(model);
  Tensor input = ToCuda(RandomTensor(DataType::kFloat16, {2, 8, 32}, 11));
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("y", CudaDevice().device_memory);
  for (uint32_t run = 0; run < 4; ++run) {
    const Tensor x = RandomTensor(DataType::kFloat16, {2, 8, 32}, 20 + run);
    UpdateInPlace(input, x);
    session.Run(binding);
    EXPECT_EQ(CompareTensors(reference.Run(x), ToHost(binding.BoundOutputs()[0].tensor()), 1e-3, 1e-3), "")
        << "run " << run;
  }
}

}  // namespace
}  // namespace tessera::test
