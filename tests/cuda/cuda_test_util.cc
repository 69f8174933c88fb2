#include "cuda/cuda_test_util.h"

#include <cuda_runtime_api.h>

#include <stdexcept>

#include "unit/session/graph_builder.h"

namespace tessera::test {

namespace {

std::string NoDeviceReason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return cudaGetErrorString(status);
  }
  if (count == 0) return "the CUDA driver reports no GPU";
  return "libtessera_cuda.so registered no CUDA EP device";
}

}  // namespace

void CudaTest::SetUp() {
  if (!HasEpDevice("cuda")) GTEST_SKIP() << "no CUDA device available: " << NoDeviceReason();
}

const EpDevice& CudaDevice() {
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == kCudaEpName) return *d;
  throw std::runtime_error("CUDA EP not registered");
}

EpFactory& CudaFactory() { return *CudaDevice().factory; }

AllocatorPtr CudaDeviceAllocator() {
  static AllocatorPtr allocator = std::make_shared<Arena>(CudaFactory().CreateAllocator(CudaDevice().device_memory),
                                                          ArenaOptions{});
  return allocator;
}

AllocatorPtr CudaPinnedAllocator() {
  static AllocatorPtr allocator =
      std::make_shared<Arena>(CudaFactory().CreateAllocator(*CudaDevice().host_accessible_memory), ArenaOptions{});
  return allocator;
}

Tensor ToCuda(const Tensor& host) {
  Tensor device = Tensor::Allocate(host.type(), host.shape(), CudaDeviceAllocator());
  TestEnv().CopyTensors({&host, 1}, {&device, 1}, nullptr);
  return device;
}

Tensor ToHost(const Tensor& any) {
  Tensor host = Tensor::Allocate(any.type(), any.shape());
  TestEnv().CopyTensors({&any, 1}, {&host, 1}, nullptr);
  return host;
}

std::vector<Tensor> RunOnCuda(const std::string& model, const Session::NamedValues& feeds,
                              const ProviderOptions& provider_options) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, provider_options);
  Session session(TestEnv(), model.data(), model.size(), options);
  std::vector<Tensor> outputs;
  for (const Value& v : session.Run(feeds)) outputs.push_back(v.tensor());
  return outputs;
}

void ExpectAllOnCuda(const std::string& model, const ProviderOptions& provider_options) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, provider_options);
  Session session = MakeSession(model, options, TestEnv());
  for (const PartitionEntry& e : session.Partition()) {
    if (!e.is_copy) {
      EXPECT_EQ(e.ep, kCudaEpName) << e.op_type << " " << e.node_name;
    }
  }
}

std::string SmallConvNetModel() {
  GraphBuilder builder;
  auto init = [&](const std::string& name, const Shape& shape, uint32_t seed, double lo = -0.5, double hi = 0.5) {
    const Tensor t = RandomTensor(DataType::kFloat, shape, seed, lo, hi);
    builder.FloatInitializer(name, shape.dims(), t.ToVector<float>());
  };
  init("w1", {8, 3, 3, 3}, 1);
  init("b1", {8}, 2);
  init("scale", {8}, 3, 0.5, 1.5);
  init("bias", {8}, 4);
  init("mean", {8}, 5);
  init("var", {8}, 6, 0.5, 1.5);
  init("w2", {8, 8, 3, 3}, 7);
  init("fc_w", {10, 8}, 8);
  init("fc_b", {10}, 9);
  builder.Input("x", {1, 3, 16, 16})
      .Node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1")
      .Node("BatchNormalization", {"c1", "scale", "bias", "mean", "var"}, {"n1"}, "bn1")
      .Node("Relu", {"n1"}, {"r1"})
      .Node("MaxPool", {"r1"}, {"p1"}, "pool")
      .Node("Conv", {"p1", "w2"}, {"c2"}, "conv2")
      .Node("Add", {"c2", "p1"}, {"s"})
      .Node("Relu", {"s"}, {"r2"})
      .Node("GlobalAveragePool", {"r2"}, {"g"})
      .Node("Flatten", {"g"}, {"f"})
      .Node("Gemm", {"f", "fc_w", "fc_b"}, {"logits"}, "fc")
      .Node("Softmax", {"logits"}, {"prob"})
      .Output("prob");
  onnx::ModelProto proto;
  if (!proto.ParseFromString(builder.Serialize())) throw std::runtime_error("cannot parse the built model");
  for (auto& node : *proto.mutable_graph()->mutable_node()) {
    auto ints = [&](const char* name, std::vector<int64_t> values) {
      auto* a = node.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : values) a->add_ints(v);
    };
    if (node.op_type() == "Conv") ints("pads", {1, 1, 1, 1});
    if (node.op_type() == "MaxPool") {
      ints("kernel_shape", {3, 3});
      ints("strides", {2, 2});
      ints("pads", {1, 1, 1, 1});
    }
    if (node.op_type() == "Gemm") {
      auto* a = node.add_attribute();
      a->set_name("transB");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(1);
    }
  }
  return proto.SerializeAsString();
}

void CompareOnCuda(OpTester& t) {
  ExpectAllOnCuda(t.SerializedModel());
  t.CompareWithCpu({"cuda"});
}

Tensor Int64s(const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

Tensor Float16ToFloat(const Tensor& half) {
  Tensor out = Tensor::Allocate(DataType::kFloat, half.shape());
  const Float16* in = half.Data<Float16>();
  float* values = out.Data<float>();
  for (int64_t i = 0; i < half.NumElements(); ++i) values[i] = ToFloat(in[i]);
  return out;
}

void CompareFloat16WithCpu(const std::string& op, int opset, const std::vector<Tensor>& half_inputs,
                           const OpBuilder& build, double absolute, double relative, const std::string& domain) {
  OpTester on_cuda(op, opset, domain);
  build(on_cuda, half_inputs);
  on_cuda.OutputName("Y");
  const std::vector<Tensor> actual = on_cuda.RunOn("cuda");
  std::vector<Tensor> float_inputs;
  for (const Tensor& t : half_inputs) float_inputs.push_back(t.type() == DataType::kFloat16 ? Float16ToFloat(t) : t);
  OpTester on_cpu(op, opset, domain);
  build(on_cpu, float_inputs);
  on_cpu.OutputName("Y");
  const std::vector<Tensor> expected = on_cpu.RunOn("cpu");
  ASSERT_EQ(actual.size(), 1u);
  ASSERT_EQ(actual[0].type(), DataType::kFloat16);
  const std::string difference = CompareTensors(expected[0], Float16ToFloat(actual[0]), absolute, relative);
  EXPECT_EQ(difference, "") << op << " float16 on CUDA vs float32 on CPU";
}

}  // namespace tessera::test
