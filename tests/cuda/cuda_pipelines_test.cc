// Device pipelines on the CUDA EP: runs ordered with the application's own stream (RunOptions::stream) without host
// waits, and TilePipeline's ring on real streams.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaPipelinesTest = CudaTest;

std::vector<float> Pseudo(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) - 0.5f;
  }
  return v;
}

// Two padded 3x3 convolutions (receptive-field radius 2), 3 channels in and out.
std::string ConvModel(const std::vector<int64_t>& dims = {1, 3, -1, -1}) {
  return GraphBuilder()
      .Input("x", dims)
      .FloatInitializer("w1", {8, 3, 3, 3}, Pseudo(216, 3))
      .FloatInitializer("w2", {3, 8, 3, 3}, Pseudo(216, 4))
      .Node("Conv", {"x", "w1"}, {"h"})
      .IntsAttribute("pads", {1, 1, 1, 1})
      .Node("Relu", {"h"}, {"r"})
      .Node("Conv", {"r", "w2"}, {"y"})
      .IntsAttribute("pads", {1, 1, 1, 1})
      .Output("y")
      .Serialize();
}

// Tiles and the whole image are different convolution shapes, for which cuDNN may choose different algorithms (TF32
// products included): outputs of size ~1 then differ by up to ~1e-3.
constexpr float kShapeTolerance = 4e-3f;

float MaxDifference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float worst = 0;
  for (int64_t i = 0; i < a.NumElements() && i < b.NumElements(); ++i)
    worst = std::max(worst, std::fabs(a.Data<float>()[i] - b.Data<float>()[i]));
  return worst;
}

// A stand-in for a long kernel of the application: a host function that blocks the stream for `ms`.
struct Blocker {
  std::atomic<bool> done{false};
  int ms = 0;
  static void CUDART_CB Run(void* self) {
    auto* b = static_cast<Blocker*>(self);
    std::this_thread::sleep_for(std::chrono::milliseconds(b->ms));
    b->done = true;
  }
};

// Application work before and after a run on one stream: the host returns from Run before the preceding "kernel"
// has finished, and the application's download queued after the run sees the run's output.
TEST_F(CudaPipelinesTest, RunOnTheApplicationsStreamDoesNotWaitOnTheHost) {
  Session session = MakeSession(ConvModel(), OptionsFor("cuda"), TestEnv());
  std::unique_ptr<Stream> app = TestEnv().CreateStream(CudaDevice());
  auto stream = static_cast<cudaStream_t>(app->native_handle());
  const Tensor fresh = Tensor::FromVector<float>({1, 3, 40, 56}, Pseudo(3 * 40 * 56, 9));
  const Tensor expected = session.Run({{"x", Value(fresh)}})[0].tensor();
  Tensor x = Tensor::Allocate(DataType::kFloat, fresh.shape(), CudaDeviceAllocator());
  Tensor y = Tensor::Allocate(DataType::kFloat, expected.shape(), CudaDeviceAllocator());
  Tensor result = Tensor::Allocate(DataType::kFloat, expected.shape(), CudaPinnedAllocator());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", x);
  binding.BindOutput("y", y);
  RunOptions options;
  options.stream = app.get();
  options.synchronize = false;
  // Round 0 runs eagerly, round 1 captures the automatic graph (a capture starts on idle streams, so that run waits
  // for the stream on the host: once per input shape), rounds 2 and 3 replay it.
  for (int round = 0; round < 4; ++round) {
    cudaMemsetAsync(y.raw_data(), 0, y.SizeInBytes(), stream);
    Blocker blocker;
    blocker.ms = 300;
    ASSERT_EQ(cudaLaunchHostFunc(stream, &Blocker::Run, &blocker), cudaSuccess);
    TestEnv().CopyTensors({&fresh, 1}, {&x, 1}, app.get());  // pre-processing: the input written on the stream
    session.Run(binding, options);
    const bool capturing = round == 1;
    if (!capturing) {
      EXPECT_FALSE(blocker.done.load()) << "round " << round << ": Run waited for the application's stream";
    }
    TestEnv().CopyTensors({&y, 1}, {&result, 1}, app.get());  // post-processing: read on the same stream
    if (!capturing) {
      EXPECT_FALSE(blocker.done.load()) << "round " << round;
    }
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_TRUE(blocker.done.load());
    EXPECT_LT(MaxDifference(result, expected), 1e-5f) << "round " << round;
  }
}

TEST_F(CudaPipelinesTest, TilePipelineRingMatchesOneRun) {
  Session session = MakeSession(ConvModel(), OptionsFor("cuda"), TestEnv());
  const Tensor image = Tensor::FromVector<float>({1, 3, 300, 410}, Pseudo(3 * 300 * 410, 5));
  const Tensor expected = session.Run({{"x", Value(image)}})[0].tensor();
  for (bool sequential : {false, true}) {
    TilePipelineOptions o;
    o.tile_height = o.tile_width = 96;
    o.halo = 2;
    o.ring_depth = 3;
    o.sequential = sequential;
    TilePipeline pipeline(TestEnv(), session, o);
    for (int repeat = 0; repeat < 2; ++repeat) {
      const Tensor tiled = pipeline.Run(image);
      EXPECT_LT(MaxDifference(tiled, expected), kShapeTolerance) << "sequential " << sequential;
    }
    EXPECT_TRUE(pipeline.stats().on_device);
    EXPECT_EQ(pipeline.stats().tiles, 4 * 5);
  }
}

// The image and the output in pinned memory, and both in device memory: windows go up and cores come back as 2-D
// regions (cudaMemcpy2DAsync), with no host staging or blending, and the result equals the staged pipeline's.
TEST_F(CudaPipelinesTest, PinnedAndDeviceImagesAreCopiedAsRegions) {
  Session session = MakeSession(ConvModel(), OptionsFor("cuda"), TestEnv());
  const Tensor image = Tensor::FromVector<float>({1, 3, 300, 410}, Pseudo(3 * 300 * 410, 7));
  const EpDevice* device = session.InputEpDevice("x");
  ASSERT_NE(device, nullptr);
  ASSERT_TRUE(device->host_accessible_memory.has_value());
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 96;
  o.halo = 2;
  o.ring_depth = 3;
  TilePipeline pipeline(TestEnv(), session, o);
  const Tensor staged = pipeline.Run(image);
  EXPECT_FALSE(pipeline.stats().direct_upload);
  for (const MemoryInfo& memory : {*device->host_accessible_memory, device->device_memory}) {
    const AllocatorPtr allocator = device->factory->CreateAllocator(memory);
    Tensor placed = Tensor::Allocate(DataType::kFloat, image.shape(), allocator);
    TestEnv().CopyTensors({&image, 1}, {&placed, 1}, nullptr);
    Tensor output = Tensor::Allocate(DataType::kFloat, staged.shape(), allocator);
    pipeline.Run(placed, output);
    EXPECT_TRUE(pipeline.stats().direct_upload && pipeline.stats().direct_download) << memory.ToString();
    Tensor back = Tensor::Allocate(DataType::kFloat, staged.shape());
    TestEnv().CopyTensors({&output, 1}, {&back, 1}, nullptr);
    EXPECT_EQ(MaxDifference(back, staged), 0.0f) << memory.ToString();
  }
}

// A fixed-shape model: every tile has the same window, so the session replays one automatic CUDA graph per tile.
TEST_F(CudaPipelinesTest, FixedShapeTilesReplayOneGraph) {
  Session session = MakeSession(ConvModel({1, 3, 100, 100}), OptionsFor("cuda"), TestEnv());
  Session whole = MakeSession(ConvModel(), OptionsFor("cuda"), TestEnv());
  const Tensor image = Tensor::FromVector<float>({1, 3, 250, 333}, Pseudo(3 * 250 * 333, 6));
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 92;
  o.halo = 4;
  TilePipeline pipeline(TestEnv(), session, o);
  const Tensor tiled = pipeline.Run(image);
  EXPECT_LT(MaxDifference(tiled, whole.Run({{"x", Value(image)}})[0].tensor()), kShapeTolerance);
  ASSERT_EQ(session.GraphStatus().rfind("automatic", 0), 0u) << session.GraphStatus();
  EXPECT_GE(session.AutomaticGraphReplays(), static_cast<size_t>(pipeline.stats().tiles) - 2) << session.GraphStatus();
}

}  // namespace
}  // namespace tessera::test
