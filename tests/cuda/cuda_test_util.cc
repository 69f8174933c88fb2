#include "cuda/cuda_test_util.h"

#include <cuda_runtime_api.h>

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

Tensor Float16ToFloat(const Tensor& half) {
  Tensor out = Tensor::Allocate(DataType::kFloat, half.shape());
  const Float16* in = half.Data<Float16>();
  float* values = out.Data<float>();
  for (int64_t i = 0; i < half.NumElements(); ++i) values[i] = ToFloat(in[i]);
  return out;
}

void CompareFloat16WithCpu(const std::string& op, int opset, const std::vector<Tensor>& half_inputs,
                           const OpBuilder& build, double absolute, double relative) {
  OpTester on_cuda(op, opset);
  build(on_cuda, half_inputs);
  on_cuda.OutputName("Y");
  const std::vector<Tensor> actual = on_cuda.RunOn("cuda");
  std::vector<Tensor> float_inputs;
  for (const Tensor& t : half_inputs) float_inputs.push_back(t.type() == DataType::kFloat16 ? Float16ToFloat(t) : t);
  OpTester on_cpu(op, opset);
  build(on_cpu, float_inputs);
  on_cpu.OutputName("Y");
  const std::vector<Tensor> expected = on_cpu.RunOn("cpu");
  ASSERT_EQ(actual.size(), 1u);
  ASSERT_EQ(actual[0].type(), DataType::kFloat16);
  const std::string difference = CompareTensors(expected[0], Float16ToFloat(actual[0]), absolute, relative);
  EXPECT_EQ(difference, "") << op << " float16 on CUDA vs float32 on CPU";
}

}  // namespace tessera::test
