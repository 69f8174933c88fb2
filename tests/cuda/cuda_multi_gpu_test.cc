// Several GPUs in one process (issue 19): a session per GPU, peer copies with CopyTensors (direct where the
// GPUs can read each other's memory), DataParallelRunner over every GPU, and a model split over two GPUs with
// its activations passed device to device. Skipped, with the reason, on hosts with fewer than two GPUs (the
// same paths run on two simulated devices in tests/unit/session/multi_device_test.cc).
#include <cmath>
#include <future>
#include <numeric>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"
#include "unit/session/multi_device_models.h"

namespace tessera::test {
namespace {

std::vector<const EpDevice*> Gpus() {
  std::vector<const EpDevice*> gpus;
  for (const EpDevice* d : TestEnv().GetEpDevices())
    if (d->ep_name == kCudaEpName) gpus.push_back(d);
  return gpus;
}

class CudaMultiGpuTest : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
    if (Gpus().size() < 2) GTEST_SKIP() << "needs two GPUs; this host has " << Gpus().size();
  }
};

AllocatorPtr GpuAllocator(const EpDevice& gpu) {
  AllocatorPtr allocator = TestEnv().GetSharedAllocator(gpu.device_memory);
  return allocator ? allocator : TestEnv().CreateSharedAllocator(gpu, MemoryType::kDefault, nullptr);
}

SessionOptions OnGpu(int index) {
  SessionOptions options;
  options.providers.push_back({kCudaEpName, {{"use_tf32", "0"}}, index});
  return options;
}

TEST_F(CudaMultiGpuTest, PeerCopiesBothWaysOnStreams) {
  const std::vector<const EpDevice*> gpus = Gpus();
  const Tensor host = RampTensor(1024, 257, 3.0f);
  Tensor on0 = Tensor::Allocate(DataType::kFloat, host.shape(), GpuAllocator(*gpus[0]));
  Tensor on1 = Tensor::Allocate(DataType::kFloat, host.shape(), GpuAllocator(*gpus[1]));
  Tensor again0 = Tensor::Allocate(DataType::kFloat, host.shape(), GpuAllocator(*gpus[0]));
  Tensor back = Tensor::Allocate(DataType::kFloat, host.shape());
  std::unique_ptr<Stream> stream0 = TestEnv().CreateStream(*gpus[0]);
  std::unique_ptr<Stream> stream1 = TestEnv().CreateStream(*gpus[1]);
  TestEnv().CopyTensors({&host, 1}, {&on0, 1}, stream0.get());
  TestEnv().CopyTensors({&on0, 1}, {&on1, 1}, stream0.get());  // GPU 0 -> GPU 1, queued on GPU 0's stream
  stream0->Synchronize();
  TestEnv().CopyTensors({&on1, 1}, {&again0, 1}, stream1.get());  // and back, on GPU 1's stream
  stream1->Synchronize();
  TestEnv().CopyTensors({&again0, 1}, {&back, 1}, nullptr);
  EXPECT_EQ(back.ToVector<float>(), host.ToVector<float>());
  TestEnv().CopyTensors({&on1, 1}, {&back, 1}, nullptr);  // synchronous, from GPU 1
  EXPECT_EQ(back.ToVector<float>(), host.ToVector<float>());
}

TEST_F(CudaMultiGpuTest, PipelineSplitOverTwoGpusMatchesTheCpu) {
  const std::vector<const EpDevice*> gpus = Gpus();
  const std::string half = MlpModel(64);
  Session a = MakeSession(half, OnGpu(0), TestEnv());
  Session b = MakeSession(half, OnGpu(1), TestEnv());
  Session cpu = MakeSession(half, OptionsFor("cpu"), TestEnv());
  const Tensor x = RampTensor(8, 64, 0.5f);
  IoBinding bind_a = a.CreateIoBinding();
  bind_a.BindInput("x", x);
  bind_a.BindOutput("y", gpus[0]->device_memory);
  a.Run(bind_a);
  const Tensor& y0 = bind_a.BoundOutputs()[0].tensor();
  ASSERT_EQ(y0.memory_info(), gpus[0]->device_memory);
  Tensor y1 = Tensor::Allocate(DataType::kFloat, y0.shape(), GpuAllocator(*gpus[1]));
  TestEnv().CopyTensors({&y0, 1}, {&y1, 1}, nullptr);
  IoBinding bind_b = b.CreateIoBinding();
  bind_b.BindInput("x", y1);
  bind_b.BindOutput("y", MemoryInfo{});
  b.Run(bind_b);
  const Tensor mid = cpu.Run({{"x", x}})[0].tensor();
  ExpectNearRelative(bind_b.BoundOutputs()[0].tensor(), cpu.Run({{"x", mid}})[0].tensor(), "pipeline output");
}

TEST_F(CudaMultiGpuTest, DataParallelRunnerOverEveryGpuMatchesTheCpu) {
  const std::filesystem::path model = std::filesystem::temp_directory_path() / "tessera_multi_gpu_mlp.onnx";
  {
    const std::string bytes = MlpModel(128);
    FILE* f = std::fopen(model.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  DataParallelOptions options;
  options.session.AddProvider(kCudaEpName, {{"use_tf32", "0"}});
  options.runs_per_device = 2;
  DataParallelRunner runner(TestEnv(), model, Gpus(), options);
  for (size_t i = 0; i < runner.size(); ++i)
    EXPECT_EQ(runner.session(i).InputMemoryInfo("x"), Gpus()[i]->device_memory) << "session " << i;
  Session cpu(TestEnv(), model, OptionsFor("cpu"));
  std::vector<Session::NamedValues> requests;
  for (int i = 0; i < 200; ++i) requests.push_back({{"x", RampTensor(16, 128, static_cast<float>(i % 9))}});
  const std::vector<std::vector<Value>> outputs = runner.RunAll(requests);
  for (size_t i = 0; i < requests.size(); ++i)
    ExpectNearRelative(outputs[i][0].tensor(), cpu.Run(requests[i])[0].tensor(), "request " + std::to_string(i));
  const std::vector<uint64_t> done = runner.CompletedPerSession();
  EXPECT_EQ(std::accumulate(done.begin(), done.end(), uint64_t{0}), requests.size());
  for (size_t i = 0; i < done.size(); ++i) EXPECT_GT(done[i], 0u) << "GPU " << i << " took no request";
  std::filesystem::remove(model);
}

}  // namespace
}  // namespace tessera::test
