// TilePipeline: tiled runs equal one run over the whole image, on the CPU and through the simulated device's ring.
#include "tessera/tile_pipeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

std::vector<float> Pseudo(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) - 0.5f;
  }
  return v;
}

// Two 3x3 convolutions with padding (receptive-field radius 2): 2 channels in, 3 out, same height and width.
std::string ConvModel(const std::vector<int64_t>& input_dims = {1, 2, -1, -1}) {
  return GraphBuilder()
      .Input("x", input_dims)
      .FloatInitializer("w1", {4, 2, 3, 3}, Pseudo(72, 1))
      .FloatInitializer("w2", {3, 4, 3, 3}, Pseudo(108, 2))
      .Node("Conv", {"x", "w1"}, {"h"})
      .IntsAttribute("pads", {1, 1, 1, 1})
      .Node("Relu", {"h"}, {"r"})
      .Node("Conv", {"r", "w2"}, {"y"})
      .IntsAttribute("pads", {1, 1, 1, 1})
      .Output("y")
      .Serialize();
}

// y = relu(x) * x + x: every op has a kernel on the simulated device.
std::string PointwiseModel() {
  return GraphBuilder()
      .Input("x", {1, 2, -1, -1})
      .Node("Relu", {"x"}, {"r"})
      .Node("Mul", {"r", "x"}, {"m"})
      .Node("Add", {"m", "x"}, {"y"})
      .Output("y")
      .Serialize();
}

Tensor Image(int64_t channels, int64_t height, int64_t width, uint32_t seed = 7) {
  return Tensor::FromVector<float>({1, channels, height, width},
                                   Pseudo(static_cast<size_t>(channels * height * width), seed));
}

float MaxDifference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float worst = 0;
  auto x = a.Span<float>(), y = b.Span<float>();
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

Tensor WholeImage(Session& session, const Tensor& image) {
  return session.Run({{"x", Value(image)}})[0].tensor();
}

TEST(TilePipelineTest, CroppedTilesWithAHaloEqualOneRunOnTheCpu) {
  Session session = MakeSession(ConvModel(), OptionsFor("cpu"), TestEnv());
  const Tensor image = Image(2, 70, 90);
  const Tensor expected = WholeImage(session, image);
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 24;
  o.halo = 2;
  TilePipeline pipeline(TestEnv(), session, o);
  const Tensor tiled = pipeline.Run(image);
  EXPECT_EQ(tiled.shape(), (Shape{1, 3, 70, 90}));
  EXPECT_LT(MaxDifference(tiled, expected), 1e-5f);
  EXPECT_EQ(pipeline.stats().tiles, 3 * 4);
  EXPECT_EQ(pipeline.stats().window_height, 28);
  EXPECT_FALSE(pipeline.stats().on_device);

  o.halo = 0;  // without context the seams differ: the comparison above can fail
  TilePipeline no_halo(TestEnv(), session, o);
  EXPECT_GT(MaxDifference(no_halo.Run(image), expected), 1e-3f);
}

TEST(TilePipelineTest, FixedShapeModelGetsTheSameWindowForEveryTileIncludingBorders) {
  // The model only accepts 32x32: tiles of 24 with a halo of 4 give 32x32 windows, shifted inward at the borders.
  Session session = MakeSession(ConvModel({1, 2, 32, 32}), OptionsFor("cpu"), TestEnv());
  Session whole = MakeSession(ConvModel(), OptionsFor("cpu"), TestEnv());
  const Tensor image = Image(2, 50, 77);
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 24;
  o.halo = 4;
  TilePipeline pipeline(TestEnv(), session, o);
  EXPECT_LT(MaxDifference(pipeline.Run(image), WholeImage(whole, image)), 1e-5f);
}

TEST(TilePipelineTest, UpscalingAndDownscalingOutputsMapToTheirPixels) {
  Session up = MakeSession(GraphBuilder()
                               .Input("x", {1, 2, -1, -1})
                               .FloatInitializer("scales", {4}, {1, 1, 2, 2})
                               .Node("Resize", {"x", "", "scales"}, {"y"})
                               .Output("y")
                               .Serialize(),
                           OptionsFor("cpu"), TestEnv());
  const Tensor image = Image(2, 37, 45);
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 16;
  o.halo = 3;
  TilePipeline upscale(TestEnv(), up, o);
  const Tensor big = upscale.Run(image);
  EXPECT_EQ(big.shape(), (Shape{1, 2, 74, 90}));
  EXPECT_EQ(MaxDifference(big, WholeImage(up, image)), 0.0f);

  Session down = MakeSession(GraphBuilder()
                                 .Input("x", {1, 2, -1, -1})
                                 .Node("MaxPool", {"x"}, {"y"})
                                 .IntsAttribute("kernel_shape", {2, 2})
                                 .IntsAttribute("strides", {2, 2})
                                 .Output("y")
                                 .Serialize(),
                             OptionsFor("cpu"), TestEnv());
  const Tensor even = Image(2, 40, 56);
  o.halo = 2;
  TilePipeline downscale(TestEnv(), down, o);
  const Tensor small = downscale.Run(even);
  EXPECT_EQ(small.shape(), (Shape{1, 2, 20, 28}));
  EXPECT_EQ(MaxDifference(small, WholeImage(down, even)), 0.0f);

  o.halo = 1;  // windows start at odd pixels: half an output pixel
  TilePipeline odd(TestEnv(), down, o);
  try {
    odd.Run(even);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not map to a whole output pixel"), std::string::npos) << e.what();
  }
}

TEST(TilePipelineTest, LinearBlendingOfAPointwiseModelIsExact) {
  Session session = MakeSession(PointwiseModel(), OptionsFor("cpu"), TestEnv());
  const Tensor image = Image(2, 33, 41);
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 10;
  o.halo = 3;
  o.blend = TileBlend::kLinear;
  TilePipeline pipeline(TestEnv(), session, o);
  EXPECT_LT(MaxDifference(pipeline.Run(image), WholeImage(session, image)), 1e-6f);
}

TEST(TilePipelineTest, LinearBlendingDownweightsTheWindowEdgesThatLackContext) {
  Session session = MakeSession(ConvModel(), OptionsFor("cpu"), TestEnv());
  const Tensor image = Image(2, 48, 48);
  const Tensor expected = WholeImage(session, image);
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 16;
  o.halo = 4;
  o.blend = TileBlend::kLinear;
  TilePipeline linear(TestEnv(), session, o);
  // The outer 2 pixels of each window lack context but weigh at most 2/8 against windows that have it.
  const float blended = MaxDifference(linear.Run(image), expected);
  o.blend = TileBlend::kCrop;
  o.halo = 0;
  TilePipeline cut(TestEnv(), session, o);
  const float seams = MaxDifference(cut.Run(image), expected);
  EXPECT_GT(blended, 0.0f);
  EXPECT_LT(blended, 0.5f * seams) << "linear " << blended << ", crop without halo " << seams;
}

Tensor PointwiseExpected(const Tensor& image) {
  std::vector<float> y;
  for (float v : image.Span<float>()) y.push_back(std::max(v, 0.0f) * v + v);
  return Tensor::FromVector<float>(image.shape(), y);
}

// The ring on the simulated device (a slower device, so that tiles are in flight together): every mode gives the
// whole-image answer, and the trace shows each tile on each stream.
TEST(TilePipelineTest, RingOnTheSimulatedDeviceMatchesAndTraces) {
  SessionOptions options = OptionsFor("testing");
  options.providers.front().options["task_delay_us"] = "300";
  Session session = MakeSession(PointwiseModel(), options, TestEnv());
  const Tensor image = Image(2, 61, 83);
  const Tensor expected = PointwiseExpected(image);
  const std::string trace = (std::filesystem::temp_directory_path() / "tessera_tile_trace_test.json").string();
  for (int depth : {1, 2, 4}) {
    for (bool sequential : {false, true}) {
      TilePipelineOptions o;
      o.tile_height = o.tile_width = 20;
      o.halo = 2;
      o.ring_depth = depth;
      o.sequential = sequential;
      o.trace_file = trace;
      TilePipeline pipeline(TestEnv(), session, o);
      for (int repeat = 0; repeat < 2; ++repeat) {  // the second run reuses the ring
        const Tensor out = pipeline.Run(image);
        EXPECT_EQ(MaxDifference(out, expected), 0.0f) << "depth " << depth << " sequential " << sequential;
      }
      const TileRunStats& s = pipeline.stats();
      EXPECT_TRUE(s.on_device);
      EXPECT_EQ(s.tiles, 4 * 5);
      EXPECT_EQ(s.input_bytes, 20 * 2 * 24 * 24 * 4);
      std::map<std::string, std::set<int64_t>> tiles_per_track;
      for (const TileTraceSpan& span : pipeline.trace()) {
        EXPECT_LE(span.start_us, span.end_us);
        tiles_per_track[span.track].insert(span.tile);
      }
      for (const char* track : {"upload", "compute", "download"}) EXPECT_EQ(tiles_per_track[track].size(), 20u) << track;
      std::ifstream file(trace);
      std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
      EXPECT_NE(text.find("\"name\":\"compute\""), std::string::npos);
      EXPECT_NE(text.find("\"name\":\"upload\""), std::string::npos);
    }
  }
  std::filesystem::remove(trace);
}

// The device ring's download of tile t must not see the output of a later tile in the same slot, and a run must not
// read a slot before its upload: with a slow device and a deep image, stale data would show as wrong pixels.
TEST(TilePipelineTest, SlotsAreReusedOnlyAfterTheirLastUse) {
  SessionOptions options = OptionsFor("testing");
  options.providers.front().options["task_delay_us"] = "100";
  Session session = MakeSession(PointwiseModel(), options, TestEnv());
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 8;
  o.ring_depth = 2;
  TilePipeline pipeline(TestEnv(), session, o);
  for (uint32_t seed : {11u, 12u}) {
    const Tensor image = Image(2, 40, 40, seed);
    EXPECT_EQ(MaxDifference(pipeline.Run(image), PointwiseExpected(image)), 0.0f);
  }
}

// Images and outputs in the device's pinned or own memory are copied tile by tile as 2-D regions (no host staging,
// no host blending with kCrop); every combination gives the whole-image answer and reports which path it took.
TEST(TilePipelineTest, PinnedAndDeviceImagesAndOutputsAreCopiedAsRegions) {
  SessionOptions options = OptionsFor("testing");
  options.providers.front().options["task_delay_us"] = "100";
  Session session = MakeSession(PointwiseModel(), options, TestEnv());
  const EpDevice* device = session.InputEpDevice("x");
  ASSERT_NE(device, nullptr);
  ASSERT_TRUE(device->host_accessible_memory.has_value());
  const AllocatorPtr pinned = device->factory->CreateAllocator(*device->host_accessible_memory);
  const AllocatorPtr on_device = device->factory->CreateAllocator(device->device_memory);
  enum class Where { kPageable, kPinned, kDevice };
  const auto place = [&](const Tensor& host, Where where) {
    if (where == Where::kPageable) return host;
    Tensor t = Tensor::Allocate(host.type(), host.shape(), where == Where::kPinned ? pinned : on_device);
    TestEnv().CopyTensors({&host, 1}, {&t, 1}, nullptr);
    return t;
  };
  const auto to_host = [&](const Tensor& t) {
    Tensor host = Tensor::Allocate(t.type(), t.shape());
    TestEnv().CopyTensors({&t, 1}, {&host, 1}, nullptr);
    return host;
  };
  const Tensor host_image = Image(2, 45, 38);
  const Tensor expected = PointwiseExpected(host_image);
  const Tensor zeros = Tensor::FromVector<float>(expected.shape(), std::vector<float>(expected.NumElements(), 0.0f));
  for (Where in : {Where::kPageable, Where::kPinned, Where::kDevice}) {
    for (Where out : {Where::kPageable, Where::kPinned, Where::kDevice}) {
      for (TileBlend blend : {TileBlend::kCrop, TileBlend::kLinear}) {
        const std::string label = "image " + std::to_string(static_cast<int>(in)) + ", output " +
                                  std::to_string(static_cast<int>(out)) +
                                  (blend == TileBlend::kCrop ? ", crop" : ", linear");
        TilePipelineOptions o;
        o.tile_height = o.tile_width = 16;
        o.halo = 2;
        o.ring_depth = 3;
        o.blend = blend;
        TilePipeline pipeline(TestEnv(), session, o);
        const Tensor image = place(host_image, in);
        Tensor output = place(zeros, out);
        if (blend == TileBlend::kLinear && out == Where::kDevice) {  // linear blending accumulates on the host
          EXPECT_THROW(pipeline.Run(image, output), Error) << label;
          continue;
        }
        pipeline.Run(image, output);
        EXPECT_LE(MaxDifference(to_host(output), expected), blend == TileBlend::kCrop ? 0.0f : 1e-6f) << label;
        const TileRunStats& stats = pipeline.stats();
        EXPECT_EQ(stats.direct_upload, in != Where::kPageable) << label;
        EXPECT_EQ(stats.direct_download, out != Where::kPageable && blend == TileBlend::kCrop) << label;
        if (stats.direct_upload) {
          EXPECT_EQ(stats.stage_seconds, 0.0) << label;
        }
        if (stats.direct_download) {
          EXPECT_EQ(stats.blend_seconds, 0.0) << label;
        }
      }
    }
  }
  // The copies-only bound takes the same direct copies.
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 16;
  o.stages = TileStages::kCopiesOnly;
  TilePipeline copies(TestEnv(), session, o);
  Tensor output = place(zeros, Where::kPinned);
  copies.Run(place(host_image, Where::kPinned), output);
  EXPECT_TRUE(copies.stats().direct_upload && copies.stats().direct_download);
  EXPECT_EQ(copies.stats().tiles, 3 * 3);
}

TEST(TilePipelineTest, StageOnlyModesRunEveryTile) {
  Session session = MakeSession(PointwiseModel(), OptionsFor("testing"), TestEnv());
  const Tensor image = Image(2, 30, 30);
  for (TileStages stages : {TileStages::kCopiesOnly, TileStages::kComputeOnly}) {
    TilePipelineOptions o;
    o.tile_height = o.tile_width = 10;
    o.stages = stages;
    TilePipeline pipeline(TestEnv(), session, o);
    pipeline.Run(image);
    EXPECT_EQ(pipeline.stats().tiles, 9);
    EXPECT_EQ(pipeline.stats().input_bytes, stages == TileStages::kComputeOnly ? 0 : 9 * 2 * 100 * 4);
  }
}

TEST(TilePipelineTest, BadArgumentsNameWhatIsWrong) {
  Session session = MakeSession(PointwiseModel(), OptionsFor("cpu"), TestEnv());
  const auto message = [&](const TilePipelineOptions& o, const Tensor& image) -> std::string {
    try {
      TilePipeline pipeline(TestEnv(), session, o);
      pipeline.Run(image);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  TilePipelineOptions o;
  o.ring_depth = 0;
  EXPECT_NE(message(o, Image(2, 8, 8)).find("ring_depth"), std::string::npos);
  o = {};
  o.input_name = "image";
  EXPECT_NE(message(o, Image(2, 8, 8)).find("no input 'image'"), std::string::npos);
  o = {};
  o.tile_width = 0;
  EXPECT_NE(message(o, Image(2, 8, 8)).find("tile sizes"), std::string::npos);
  o = {};
  EXPECT_NE(message(o, Tensor::FromVector<int64_t>({1, 2, 2, 2}, std::vector<int64_t>(8))).find("takes float"),
            std::string::npos);
  EXPECT_NE(message(o, Tensor::FromVector<float>({2, 2}, std::vector<float>(4))).find("rank"), std::string::npos);
  // The session stays usable.
  EXPECT_EQ(WholeImage(session, Image(2, 4, 4)).shape(), (Shape{1, 2, 4, 4}));
}

}  // namespace
}  // namespace tessera::test

namespace tessera::test {
namespace {

// A run that fails part way through the ring (device memory runs out) ends Run with that error: the stager and
// blender threads stop instead of waiting forever, and the streams are drained.
TEST(TilePipelineTest, AFailingTileEndsRunWithItsError) {
  SessionOptions options = OptionsFor("testing");
  // Every allocation counts (no same-stream cache): the probe and the first few tiles succeed, a later tile's run
  // fails while tiles before it are being blended and tiles after it staged.
  options.providers.front().options["fail_allocations_after"] = "11";
  options.config["session.prepare_static_shapes"] = "0";
  options.stream_cache_bytes = 0;
  Session session = MakeSession(PointwiseModel(), options, TestEnv());
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 8;
  o.ring_depth = 3;
  TilePipeline pipeline(TestEnv(), session, o);
  const Tensor image = Image(2, 64, 64);
  for (int attempt = 0; attempt < 2; ++attempt) {  // and again: the pipeline's threads and slots are reusable
    try {
      pipeline.Run(image);
      FAIL() << "expected the simulated device to run out of memory";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
      EXPECT_NE(std::string(e.what()).find("fail_allocations_after"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera::test
