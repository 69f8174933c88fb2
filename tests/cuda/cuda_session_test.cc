// Sessions on the CUDA EP: CPU fallback inside a model, IO binding with device tensors, async runs,
// out-of-memory recovery, and a small convolutional network end to end.
#include <cuda_runtime_api.h>

#include <cmath>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaSessionTest = CudaTest;

// Relu and Add run on the GPU; Sin has no CUDA kernel and falls back to the CPU in the middle.
std::string MixedModel() {
  return GraphBuilder()
      .Input("x", {-1, 16})
      .Node("Relu", {"x"}, {"r"})
      .Node("Sin", {"r"}, {"e"})
      .Node("Add", {"e", "x"}, {"y"})
      .Node("Sigmoid", {"y"}, {"z"})
      .Output("y")
      .Output("z")
      .Serialize();
}

Tensor Ramp(int64_t rows, float scale) {
  std::vector<float> v(static_cast<size_t>(rows) * 16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * (static_cast<float>(i % 29) - 14.0f);
  return Tensor::FromVector<float>({rows, 16}, v);
}

std::vector<float> ExpectedY(const Tensor& x) {
  std::vector<float> y;
  for (float v : x.Span<float>()) y.push_back(std::sin(std::max(v, 0.0f)) + v);
  return y;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-5) << "element " << i;
}

TEST_F(CudaSessionTest, ModelMixingCudaAndCpuNodes) {
  const std::string model = MixedModel();
  Session session = MakeSession(model, OptionsFor("cuda"), TestEnv());
  std::map<std::string, std::string> placement;
  int copies = 0;
  for (const PartitionEntry& e : session.Partition()) {
    if (e.is_copy)
      ++copies;
    else
      placement[e.op_type] = e.ep;
  }
  EXPECT_EQ(placement["Relu"], kCudaEpName);
  EXPECT_EQ(placement["Sin"], "CPUExecutionProvider");
  EXPECT_EQ(placement["Add"], kCudaEpName);
  EXPECT_EQ(placement["Sigmoid"], kCudaEpName);
  EXPECT_GE(copies, 2);  // device -> host before Sin, host -> device after it
  const Tensor x = Ramp(5, 0.25f);
  const std::vector<Value> outputs = session.Run({{"x", x}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_TRUE(outputs[0].tensor().memory_info().IsHostReadable());
  ExpectNear(outputs[0].tensor().ToVector<float>(), ExpectedY(x));
  std::vector<float> z;
  for (float y : ExpectedY(x)) z.push_back(1.0f / (1.0f + std::exp(-y)));
  ExpectNear(outputs[1].tensor().ToVector<float>(), z);
}

TEST_F(CudaSessionTest, IoBindingWithInputsAndOutputsOnTheGpu) {
  const std::string model = MixedModel();
  Session session = MakeSession(model, OptionsFor("cuda"), TestEnv());
  const MemoryInfo gpu = CudaDevice().device_memory;
  EXPECT_EQ(session.InputMemoryInfo("x"), gpu);
  ASSERT_NE(session.InputEpDevice("x"), nullptr);
  EXPECT_EQ(session.InputEpDevice("x")->ep_name, kCudaEpName);
  const Tensor x = Ramp(3, 0.5f);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", ToCuda(x));
  binding.BindOutput("y", gpu);
  binding.BindOutput("z", MemoryInfo::Host());
  session.Run(binding);
  const Tensor& y = binding.BoundOutputs()[0].tensor();
  EXPECT_EQ(y.memory_info(), gpu);
  ExpectNear(ToHost(y).ToVector<float>(), ExpectedY(x));
  EXPECT_TRUE(binding.BoundOutputs()[1].tensor().memory_info().IsHostReadable());

  // A preallocated device output is written in place.
  Tensor preallocated = Tensor::Allocate(DataType::kFloat, {3, 16}, CudaDeviceAllocator());
  binding.ClearBoundOutputs();
  binding.BindOutput("y", preallocated);
  session.Run(binding);
  EXPECT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), preallocated.raw_data());
  ExpectNear(ToHost(preallocated).ToVector<float>(), ExpectedY(x));

  // Pinned input memory works too.
  Tensor pinned = Tensor::Allocate(DataType::kFloat, x.shape(), CudaPinnedAllocator());
  TestEnv().CopyTensors({&x, 1}, {&pinned, 1}, nullptr);
  binding.BindInput("x", pinned);
  session.Run(binding);
  ExpectNear(ToHost(preallocated).ToVector<float>(), ExpectedY(x));
}

// Memory the application allocated with cudaMalloc, wrapped as tensors without a copy: bound as input and
// as output, read and written in place, and the same device pointers handed back.
TEST_F(CudaSessionTest, CallerCudaMallocMemoryIsWrappedWithoutACopy) {
  const std::string model = MixedModel();
  Session session = MakeSession(model, OptionsFor("cuda"), TestEnv());
  const MemoryInfo gpu = CudaDevice().device_memory;
  const Tensor x = Ramp(4, 0.25f);
  const size_t bytes = x.SizeInBytes();
  void* x_memory = nullptr;
  void* y_memory = nullptr;
  ASSERT_EQ(cudaMalloc(&x_memory, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&y_memory, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(x_memory, x.raw_data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  {
    Tensor x_wrapped = Tensor::Wrap(DataType::kFloat, x.shape(), x_memory, bytes, gpu);
    Tensor y_wrapped = Tensor::Wrap(DataType::kFloat, x.shape(), y_memory, bytes, gpu);
    IoBinding binding = session.CreateIoBinding();
    binding.BindInput("x", x_wrapped);
    binding.BindOutput("y", y_wrapped);
    binding.BindOutput("z", MemoryInfo::Host());
    session.Run(binding);
    EXPECT_EQ(binding.BoundOutputs()[0].tensor().raw_data(), y_memory);
  }
  std::vector<float> y(x.NumElements());
  ASSERT_EQ(cudaMemcpy(y.data(), y_memory, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ExpectNear(y, ExpectedY(x));
  EXPECT_EQ(cudaFree(x_memory), cudaSuccess);
  EXPECT_EQ(cudaFree(y_memory), cudaSuccess);
}

TEST_F(CudaSessionTest, AsyncRunThenSynchronizeOutputs) {
  // All nodes on the GPU so that the run can return before the device has finished.
  const std::string model = GraphBuilder()
                                .Input("x", {-1, 16})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Mul", {"r", "x"}, {"m"})
                                .Node("Add", {"m", "x"}, {"y"})
                                .Output("y")
                                .Serialize();
  Session session = MakeSession(model, OptionsFor("cuda"), TestEnv());
  const Tensor x = Ramp(4096, 0.01f);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", ToCuda(x));
  binding.BindOutput("y", CudaDevice().device_memory);
  RunOptions async;
  async.synchronize = false;
  for (int run = 0; run < 3; ++run) {
    session.Run(binding, async);
    binding.SynchronizeOutputs();
    std::vector<float> expected;
    for (float v : x.Span<float>()) expected.push_back(std::max(v, 0.0f) * v + v);
    ExpectNear(ToHost(binding.BoundOutputs()[0].tensor()).ToVector<float>(), expected);
  }
}

TEST_F(CudaSessionTest, OutOfMemoryUnderGpuMemLimitIsClearAndTheSessionRecovers) {
  const std::string model = MixedModel();
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"gpu_mem_limit", std::to_string(1 << 20)}});
  Session session = MakeSession(model, options, TestEnv());
  try {
    session.Run({{"x", Ramp(1 << 16, 1.0f)}});  // 4 MiB per tensor: over the 1 MiB limit
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("Cuda"), std::string::npos) << e.what();
  }
  const Tensor small = Ramp(2, 1.0f);
  ExpectNear(session.Run({{"x", small}})[0].tensor().ToVector<float>(), ExpectedY(small));
}

// A miniature ResNet: conv-bn-relu, maxpool, conv + identity shortcut, relu, global pool, flatten, gemm,
// softmax. Every node runs on the GPU; the result matches the CPU EP's.
TEST_F(CudaSessionTest, SmallConvolutionalNetworkMatchesCpu) {
  const std::string model = SmallConvNetModel();
  Session on_cuda = MakeSession(model, OptionsFor("cuda"), TestEnv());
  for (const PartitionEntry& e : on_cuda.Partition()) {
    if (!e.is_copy) {
      EXPECT_EQ(e.ep, kCudaEpName) << e.op_type << " " << e.node_name;
    }
  }
  Session on_cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  const Tensor x = RandomTensor(DataType::kFloat, {1, 3, 16, 16}, 10);
  const Tensor expected = on_cpu.Run({{"x", x}})[0].tensor();
  const Tensor actual = on_cuda.Run({{"x", x}})[0].tensor();
  EXPECT_EQ(CompareTensors(expected, actual, 1e-3, 1e-2), "");
}

}  // namespace
}  // namespace tessera::test
