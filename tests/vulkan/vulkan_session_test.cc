// The Vulkan EP in sessions: discovery, CopyTensors in every direction, whole models against the CPU EP (fusions
// included), IO binding with device outputs, recorded command buffers replayed, concurrent runs, fallback and errors.
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "session/profile_reader.h"
#include "tessera/tile_pipeline.h"
#include "unit/graph/passes/attention_graphs.h"
#include "unit/session/graph_builder.h"
#include "vulkan/vulkan_test_util.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
using VulkanSessionTest = VulkanTest;

TEST_F(VulkanSessionTest, DiscoveryDescribesTheDeviceAndItsMemory) {
  const EpDevice& d = VulkanDevice();
  EXPECT_EQ(d.device->type, DeviceType::kGpu);
  for (const char* key : {"name", "vulkan_index", "vulkan_device_type", "vulkan_api_version", "driver_version",
                          "subgroup_size", "float16", "cooperative_matrix", "memory_bytes"})
    EXPECT_EQ(d.device->metadata.count(key), 1u) << key;
  EXPECT_EQ(d.device_memory.address_space, kVulkanAddressSpace);
  EXPECT_EQ(d.device_memory.memory_type, MemoryType::kDefault);
  ASSERT_TRUE(d.host_accessible_memory.has_value());
  EXPECT_EQ(d.host_accessible_memory->memory_type, MemoryType::kHostAccessible);
  EXPECT_TRUE(d.host_accessible_memory->IsHostReadable());
  EXPECT_FALSE(d.device_memory.IsHostReadable());
  EXPECT_NE(d.device_memory.ToString().find("vulkan"), std::string::npos) << d.device_memory.ToString();
  // Same vendor and ordinal as another API's memory would be, but never equal to it.
  MemoryInfo other = d.device_memory;
  other.address_space = 0;
  EXPECT_NE(other, d.device_memory);
}

TEST_F(VulkanSessionTest, CopyTensorsInEveryDirection) {
  const Tensor host = RandomTensor(DataType::kFloat, {3, 1000}, 1);
  Tensor device = ToVulkan(host);
  Tensor device2 = Tensor::Allocate(DataType::kFloat, host.shape(), VulkanDeviceAllocator());
  Tensor visible = Tensor::Allocate(DataType::kFloat, host.shape(), VulkanHostVisibleAllocator());
  Tensor device3 = Tensor::Allocate(DataType::kFloat, host.shape(), VulkanDeviceAllocator());
  std::unique_ptr<Stream> stream = VulkanDevice().factory->CreateStream(VulkanDevice().device_memory);
  ASSERT_NE(stream, nullptr);
  TestEnv().CopyTensors({&device, 1}, {&device2, 1}, stream.get());   // device -> device
  TestEnv().CopyTensors({&device2, 1}, {&visible, 1}, stream.get());  // device -> host-visible, asynchronous
  stream->Synchronize();
  EXPECT_EQ(visible.ToVector<float>(), host.ToVector<float>());
  visible.Data<float>()[5] = 42.0f;                                   // written on the host, read by the device
  TestEnv().CopyTensors({&visible, 1}, {&device3, 1}, stream.get());
  Tensor back = Tensor::Allocate(DataType::kFloat, host.shape());
  TestEnv().CopyTensors({&device3, 1}, {&back, 1}, stream.get());     // device -> pageable host: complete on return
  std::vector<float> expected = host.ToVector<float>();
  expected[5] = 42.0f;
  EXPECT_EQ(back.ToVector<float>(), expected);
  // Batched, without a stream.
  Tensor a = ToVulkan(Tensor::FromVector<float>({2}, {1, 2})), b = ToVulkan(Tensor::FromVector<float>({3}, {3, 4, 5}));
  Tensor ha = Tensor::Allocate(DataType::kFloat, {2}), hb = Tensor::Allocate(DataType::kFloat, {3});
  std::vector<Tensor> src = {a, b}, dst = {ha, hb};
  TestEnv().CopyTensors(src, dst, nullptr);
  EXPECT_EQ(dst[0].ToVector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(dst[1].ToVector<float>(), (std::vector<float>{3, 4, 5}));
}

// 2-D regions: a 5 x 7 window of a 20 x 30 image in host-visible memory goes up into device memory (one
// vkCmdCopyBuffer of 5 rows), then into its place in a zeroed host-visible image; pageable memory is not taken.
TEST_F(VulkanSessionTest, CopyTensorRegionsBetweenHostVisibleAndDeviceMemory) {
  const EpDevice& d = VulkanDevice();
  ASSERT_TRUE(TestEnv().CanCopyRegions(*d.host_accessible_memory, d.device_memory));
  EXPECT_FALSE(TestEnv().CanCopyRegions(MemoryInfo::Host(), d.device_memory));
  Tensor image = Tensor::Allocate(DataType::kFloat, {20, 30}, VulkanHostVisibleAllocator());
  for (int64_t i = 0; i < 600; ++i) image.Data<float>()[i] = static_cast<float>(i);
  Tensor window = Tensor::Allocate(DataType::kFloat, {5, 7}, VulkanDeviceAllocator());
  Tensor placed = Tensor::Allocate(DataType::kFloat, {20, 30}, VulkanHostVisibleAllocator());
  std::fill_n(placed.Data<float>(), 600, -1.0f);
  std::unique_ptr<Stream> stream = d.factory->CreateStream(d.device_memory);
  const CopyRegion up{&image, &window, (4 * 30 + 9) * 4, 30 * 4, 0, 7 * 4, 7 * 4, 5};
  const CopyRegion down{&window, &placed, 0, 7 * 4, (4 * 30 + 9) * 4, 30 * 4, 7 * 4, 5};
  TestEnv().CopyTensorRegions({&up, 1}, stream.get());
  TestEnv().CopyTensorRegions({&down, 1}, stream.get());
  stream->Synchronize();
  for (int64_t y = 0; y < 20; ++y)
    for (int64_t x = 0; x < 30; ++x) {
      const bool inside = y >= 4 && y < 9 && x >= 9 && x < 16;
      EXPECT_EQ(placed.Data<float>()[y * 30 + x], inside ? static_cast<float>(y * 30 + x) : -1.0f)
          << "(" << y << ", " << x << ")";
    }
  // Without a stream: complete on return.
  std::fill_n(placed.Data<float>(), 600, -1.0f);
  TestEnv().CopyTensorRegions({&down, 1}, nullptr);
  EXPECT_EQ(placed.Data<float>()[4 * 30 + 9], 129.0f);
  EXPECT_EQ(placed.Data<float>()[8 * 30 + 15], 255.0f);
}

// TilePipeline on the Vulkan EP with the image and the output in host-visible memory: windows and cores are copied
// as regions (no host staging or blending) and the result equals the pageable-memory run's, and the CPU's.
TEST_F(VulkanSessionTest, TilePipelineCopiesHostVisibleImagesAsRegions) {
  const std::string model = GraphBuilder()
                                .Input("x", {1, 2, -1, -1})
                                .Node("Relu", {"x"}, {"r"})
                                .Node("Mul", {"r", "x"}, {"m"})
                                .Node("Add", {"m", "x"}, {"y"})
                                .Output("y")
                                .Serialize();
  SessionOptions options;
  options.AddProvider(EpTypeFromShortName("vulkan"));
  Session session = MakeSession(model, options, TestEnv());
  const Tensor host = RandomTensor(DataType::kFloat, {1, 2, 70, 53}, 9);
  std::vector<float> expected;
  for (float v : host.Span<float>()) expected.push_back(std::max(v, 0.0f) * v + v);
  TilePipelineOptions o;
  o.tile_height = o.tile_width = 24;
  o.halo = 3;
  TilePipeline pipeline(TestEnv(), session, o);
  EXPECT_EQ(pipeline.Run(host).ToVector<float>(), expected);
  EXPECT_FALSE(pipeline.stats().direct_upload);
  Tensor image = Tensor::Allocate(DataType::kFloat, host.shape(), VulkanHostVisibleAllocator());
  std::copy_n(host.Data<float>(), host.NumElements(), image.Data<float>());
  Tensor output = Tensor::Allocate(DataType::kFloat, host.shape(), VulkanHostVisibleAllocator());
  pipeline.Run(image, output);
  EXPECT_TRUE(pipeline.stats().on_device && pipeline.stats().direct_upload && pipeline.stats().direct_download);
  EXPECT_EQ(output.ToVector<float>(), expected);
}

// conv(3->8) + relu, conv(8->8) + the first conv's output + relu (a residual FusedConv), pool, flatten, gemm, softmax.
std::string SmallResidualNet() {
  GraphBuilder b(17);
  auto init = [&](const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
    b.FloatInitializer(name, dims, RandomTensor(DataType::kFloat, Shape(dims), seed, -0.5, 0.5).ToVector<float>());
  };
  init("w1", {8, 3, 3, 3}, 1);
  init("b1", {8}, 2);
  init("w2", {8, 8, 3, 3}, 3);
  init("fc_w", {8, 10}, 4);
  init("fc_b", {10}, 5);
  b.Input("x", {2, 3, 16, 16})
      .Node("Conv", {"x", "w1", "b1"}, {"c1"}).IntsAttribute("pads", {1, 1, 1, 1})
      .Node("Relu", {"c1"}, {"r1"})
      .Node("Conv", {"r1", "w2"}, {"c2"}).IntsAttribute("pads", {1, 1, 1, 1})
      .Node("Add", {"c2", "r1"}, {"s"})
      .Node("Relu", {"s"}, {"r2"})
      .Node("MaxPool", {"r2"}, {"p"}).IntsAttribute("kernel_shape", {2, 2}).IntsAttribute("strides", {2, 2})
      .Node("GlobalAveragePool", {"p"}, {"g"})
      .Node("Flatten", {"g"}, {"f"})
      .Node("Gemm", {"f", "fc_w", "fc_b"}, {"logits"})
      .Node("Softmax", {"logits"}, {"prob"})
      .Output("prob");
  return b.Serialize();
}

std::vector<Tensor> RunModel(const std::string& model, const std::string& ep, const Session::NamedValues& feeds,
                        const ProviderOptions& options = {}) {
  SessionOptions session_options;
  if (ep != "cpu") session_options.AddProvider(EpTypeFromShortName(ep), options);
  Session session = MakeSession(model, session_options, TestEnv());
  std::vector<Tensor> out;
  for (const Value& v : session.Run(feeds)) out.push_back(v.tensor());
  return out;
}

TEST_F(VulkanSessionTest, ResidualConvNetMatchesTheCpuWithFusedConvolutions) {
  const std::string model = SmallResidualNet();
  ExpectAllOnVulkan(model);
  SessionOptions options;
  options.AddProvider(kVulkanEpName);
  Session session = MakeSession(model, options, TestEnv());
  size_t fused = 0;
  for (const PartitionEntry& e : session.Partition()) fused += e.op_type == "FusedConv";
  EXPECT_EQ(fused, 2u) << "Conv + Relu and Conv + Add + Relu become FusedConv on the Vulkan EP";
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 16, 16}, 9);
  const std::vector<Tensor> cpu = RunModel(model, "cpu", {{"x", x}});
  const std::vector<Tensor> vulkan = RunModel(model, "vulkan", {{"x", x}});
  ASSERT_EQ(vulkan.size(), 1u);
  EXPECT_EQ(CompareTensors(cpu[0], vulkan[0], 1e-5, 1e-4), "");
}

// SiLU after a Conv (YOLO-style detectors) becomes FusedConv with the Swish activation on the Vulkan EP too.
TEST_F(VulkanSessionTest, ConvSiluFusesIntoTheConvolution) {
  GraphBuilder b(17);
  b.FloatInitializer("w", {8, 3, 3, 3}, RandomTensor(DataType::kFloat, {8, 3, 3, 3}, 31, -0.5, 0.5).ToVector<float>());
  b.FloatInitializer("b", {8}, RandomTensor(DataType::kFloat, {8}, 32, -0.5, 0.5).ToVector<float>());
  b.Input("x", {1, 3, 12, 12})
      .Node("Conv", {"x", "w", "b"}, {"c"}).IntsAttribute("pads", {1, 1, 1, 1})
      .Node("Sigmoid", {"c"}, {"gate"})
      .Node("Mul", {"c", "gate"}, {"y"})
      .Output("y");
  const std::string model = b.Serialize();
  ExpectAllOnVulkan(model);
  SessionOptions options;
  options.AddProvider(kVulkanEpName);
  Session session = MakeSession(model, options, TestEnv());
  std::vector<std::string> ops;
  for (const PartitionEntry& e : session.Partition())
    if (!e.is_copy) ops.push_back(e.op_type);
  EXPECT_EQ(ops, std::vector<std::string>{"FusedConv"});
  const Tensor x = RandomTensor(DataType::kFloat, {1, 3, 12, 12}, 33);
  EXPECT_EQ(CompareTensors(RunModel(model, "cpu", {{"x", x}})[0], RunModel(model, "vulkan", {{"x", x}})[0], 1e-5, 1e-4),
            "");
}

TEST_F(VulkanSessionTest, IoBindingWithDeviceOutputsAndRecordedCommandBuffers) {
  const std::string model = SmallResidualNet();
  for (const char* capture : {"0", "1"}) {
    SCOPED_TRACE(std::string("enable_graph_capture=") + capture);
    SessionOptions options;
    options.AddProvider(kVulkanEpName, {{"enable_graph_capture", capture}});
    Session session = MakeSession(model, options, TestEnv());
    Tensor x = ToVulkan(RandomTensor(DataType::kFloat, {2, 3, 16, 16}, 10));
    Tensor y = Tensor::Allocate(DataType::kFloat, {2, 10}, VulkanDeviceAllocator());
    IoBinding binding = session.CreateIoBinding();
    binding.BindInput("x", x);
    binding.BindOutput("prob", y);
    for (uint32_t seed = 11; seed < 15; ++seed) {  // the input changes in place between runs (replays included)
      const Tensor input = RandomTensor(DataType::kFloat, {2, 3, 16, 16}, seed);
      TestEnv().CopyTensors({&input, 1}, {&x, 1}, nullptr);
      session.Run(binding);
      binding.SynchronizeOutputs();
      const std::vector<Tensor> cpu = RunModel(model, "cpu", {{"x", input}});
      EXPECT_EQ(CompareTensors(cpu[0], ToHostTensor(y), 1e-5, 1e-4), "") << "seed " << seed;
    }
  }
}

// Split-K convolutions (grids too small to fill the GPU: partial sums in an arena buffer, then conv_reduce.comp):
// chained split convolutions (9 and 5 chunks) give the right outputs run after run, eager and replayed from a
// recorded command buffer, while the input changes in place between runs.
TEST_F(VulkanSessionTest, SplitKConvolutionsRunAfterRunAndReplayed) {
  PassTestGraph g(13);
  g.Input("x", {1, 64, 7, 7}).Output("y");
  AddConv(g, "x", "c1", 64, 64, 3, 1);  // one 64 x 64 tile, 576 deep: split nine ways
  g.Node("Relu", {"c1"}, {"r1"});
  AddConv(g, "r1", "c2", 64, 40, 3, 1);  // 576 deep again, another counter reuse on the stream
  AddConv(g, "c2", "y", 40, 24, 3, 0);   // 360 deep: five chunks
  const std::string bytes = g.Serialize();
  for (const char* capture : {"0", "1"}) {
    SCOPED_TRACE(std::string("enable_graph_capture=") + capture);
    SessionOptions options;
    options.AddProvider(kVulkanEpName, {{"enable_graph_capture", capture}});
    Session session(TestEnv(), bytes.data(), bytes.size(), options);
    Session reference(TestEnv(), bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
    Tensor x = ToVulkan(RandomTensor(DataType::kFloat, {1, 64, 7, 7}, 30));
    IoBinding binding = session.CreateIoBinding();
    binding.BindInput("x", x);
    binding.BindOutput("y", MemoryInfo::Host());
    for (uint32_t seed = 31; seed < 36; ++seed) {
      const Tensor input = RandomTensor(DataType::kFloat, {1, 64, 7, 7}, seed);
      TestEnv().CopyTensors({&input, 1}, {&x, 1}, nullptr);
      session.Run(binding);
      binding.SynchronizeOutputs();
      const std::vector<Value> want = reference.Run({{"x", Value(input)}});
      EXPECT_EQ(CompareTensors(want[0].tensor(), binding.BoundOutputs()[0].tensor(), 1e-4, 1e-4), "") << "seed " << seed;
    }
  }
}

// Profiling: every Vulkan step of an eager run has a device time from timestamp queries, inside its run on the
// host timeline; runs that replay a recorded command buffer add none (no marker enters a capture).
TEST_F(VulkanSessionTest, ProfiledRunsHaveDeviceTimesForEveryVulkanStep) {
  const fs::path dir = fs::temp_directory_path() / ("tessera_vulkan_profiling_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* capture : {"0", "1"}) {
    SCOPED_TRACE(std::string("enable_graph_capture=") + capture);
    SessionOptions options;
    options.AddProvider(kVulkanEpName, {{"enable_graph_capture", capture}});
    options.enable_profiling = true;
    options.profile_file_prefix = (dir / (std::string("prof") + capture)).string();
    Session session = MakeSession(SmallResidualNet(), options, TestEnv());
    Tensor x = ToVulkan(RandomTensor(DataType::kFloat, {2, 3, 16, 16}, 10));
    IoBinding binding = session.CreateIoBinding();
    binding.BindInput("x", x);
    binding.BindOutput("prob", MemoryInfo::Host());
    for (int run = 0; run < 3; ++run) session.Run(binding);
    const Profile profile = ReadProfile(session.EndProfiling());
    size_t vulkan_steps = 0, timed = 0;
    std::vector<ProfileEvent> runs;
    for (const ProfileEvent& e : profile.events)
      if (e.phase == "X" && e.category == "Session" && e.name == "model_run") runs.push_back(e);
    ASSERT_EQ(runs.size(), 3u);
    for (const ProfileEvent& e : profile.events) {
      if (e.phase != "X") continue;
      if (e.category == "Node") vulkan_steps += e.provider() == kVulkanEpName;
      if (e.category != "Kernel") continue;
      EXPECT_EQ(e.provider(), kVulkanEpName) << e.name;
      EXPECT_GE(e.dur_us, 0) << e.name;
      bool inside = false;
      for (const ProfileEvent& run : runs)
        inside |= e.ts_us >= run.ts_us - 0.002 && e.ts_us + e.dur_us <= run.ts_us + run.dur_us + 0.002;
      EXPECT_TRUE(inside) << e.name << " at " << e.ts_us;
      ++timed;
    }
    size_t steps_per_run = 0;
    for (const PartitionEntry& e : session.Partition()) steps_per_run += !e.is_copy && e.ep == kVulkanEpName;
    ASSERT_GT(steps_per_run, 0u);
    if (std::string(capture) == "0") {
      EXPECT_EQ(vulkan_steps, 3 * steps_per_run);
      EXPECT_EQ(timed, vulkan_steps);  // every step of every run
    } else {
      EXPECT_EQ(timed, steps_per_run);  // the warm-up run's: the capture is not timed, replays have no steps
    }
  }
  fs::remove_all(dir);
}

// An attention mask as transformer exports compute it, in bool: the padding mask cast to bool and reshaped, And-ed
// with a causal mask, negated, expanded over the heads, and applied with Where to the scores.
std::string BoolAttentionMaskModel() {
  constexpr int kBool = static_cast<int>(DataType::kBool), kInt64 = static_cast<int>(DataType::kInt64);
  std::vector<int64_t> causal(64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) causal[i * 8 + j] = j <= i ? 1 : 0;
  GraphBuilder b;
  b.Input("attention_mask", {1, 8}, kInt64).Input("scores", {1, 2, 8, 8});
  b.Node("Cast", {"attention_mask"}, {"padding"}).IntAttribute("to", kBool);
  b.Node("Reshape", {"padding", "row_shape"}, {"padding_rows"});
  b.Node("Cast", {"causal_i64"}, {"causal"}).IntAttribute("to", kBool);
  b.Node("And", {"padding_rows", "causal"}, {"visible"});
  b.Node("Not", {"visible"}, {"hidden"});
  b.Node("Expand", {"hidden", "heads_shape"}, {"hidden_heads"});
  b.Node("Where", {"hidden_heads", "minus_big", "scores"}, {"masked"});
  b.Output("masked");
  b.Int64Initializer("row_shape", {4}, {1, 1, 1, 8})
      .Int64Initializer("causal_i64", {1, 1, 8, 8}, causal)
      .Int64Initializer("heads_shape", {4}, {1, 2, 8, 8})
      .FloatInitializer("minus_big", {}, {-1e9f});
  return b.Serialize();
}

TEST_F(VulkanSessionTest, BoolAttentionMasksRunOnTheDeviceAndRecord) {
  if (VulkanDevice().device->metadata.at("8bit_storage") != "1") GTEST_SKIP() << "the device has no 8-bit storage";
  const std::string model = BoolAttentionMaskModel();
  ExpectAllOnVulkan(model);
  SessionOptions options;
  options.AddProvider(kVulkanEpName, {{"enable_graph_capture", "1"}});
  Session session = MakeSession(model, options, TestEnv());
  Tensor mask = ToVulkan(Tensor::FromVector<int64_t>({1, 8}, std::vector<int64_t>(8, 1)));
  Tensor scores = ToVulkan(RandomTensor(DataType::kFloat, {1, 2, 8, 8}, 30));
  Tensor out = Tensor::Allocate(DataType::kFloat, {1, 2, 8, 8}, VulkanDeviceAllocator());
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("attention_mask", mask);
  binding.BindInput("scores", scores);
  binding.BindOutput("masked", out);
  for (int padded = 0; padded < 4; ++padded) {  // the mask changes in place between runs (replays included)
    std::vector<int64_t> values(8, 1);
    for (int k = 0; k < padded; ++k) values[7 - k] = 0;
    const Tensor host_mask = Tensor::FromVector<int64_t>({1, 8}, values);
    TestEnv().CopyTensors({&host_mask, 1}, {&mask, 1}, nullptr);
    session.Run(binding);
    binding.SynchronizeOutputs();
    const std::vector<Tensor> cpu =
        RunModel(model, "cpu", {{"attention_mask", host_mask}, {"scores", ToHostTensor(scores)}});
    EXPECT_EQ(CompareTensors(cpu[0], ToHostTensor(out), 0, 0), "") << padded << " padded positions";
  }
  EXPECT_NE(session.GraphStatus().find("explicit"), std::string::npos) << session.GraphStatus();
}

// ai.tessera::Attention on the Vulkan EP (attention_fusion, on by default; provider option fused_attention = 0 keeps
// the subgraphs unfused): the exporters' attention subgraphs (an additive mask,
// torch SDPA's Boolean mask with its NaN guard, float16, key lengths across the kernel's 64-key chunks, head sizes
// above 64, one decoding step, no mask) become one Vulkan step whose outputs match the unfused graph on
// the CPU. A decoding step's cache writes stay ScatterElements: the Vulkan kernel does not take the cache-update form
// (cache_update_fusion asks for a kernel of 8 inputs).
// A BERT-style block whose merged Q/K/V projection the fused attention reads in place
// (graph/passes/packed_qkv_attention.h): the packed operands' offsets reach the shader's addresses. In float16 too
// (attention_coop.comp on devices with cooperative matrices: the packed rows are whole 16-byte words).
TEST_F(VulkanSessionTest, PackedProjectionsRunOnTheDeviceAndMatchTheCpu) {
  const bool half = VulkanDevice().device->metadata.at("float16") == "1";
  for (bool in_half : {false, true}) {
    if (in_half && !half) continue;
    SCOPED_TRACE(in_half ? "float16" : "float32");
    const PassTestGraph g =
        SelfAttentionBlockGraph({.batch = 2, .seq = 33, .heads = 4, .head = 16, .half = in_half});
    const std::string bytes = g.Serialize();
    SessionOptions options;
    options.AddProvider(kVulkanEpName, {{"fused_attention", "1"}});
    Session vulkan(TestEnv(), bytes.data(), bytes.size(), options);
    size_t fused = 0, splits = 0;
    for (const PartitionEntry& e : vulkan.Partition()) {
      fused += e.op_type == "Attention" && e.ep == kVulkanEpName;
      splits += e.op_type == "Split";
    }
    EXPECT_EQ(fused, 1u);
    EXPECT_EQ(splits, 0u);
    Session reference(TestEnv(), bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
    const Session::NamedValues feeds = g.Feeds();
    const double tolerance = in_half ? 2e-2 : 1e-4;
    EXPECT_EQ(CompareTensors(reference.Run(feeds)[0].tensor(), vulkan.Run(feeds)[0].tensor(), tolerance, tolerance),
              "");
  }
}

TEST_F(VulkanSessionTest, FusedAttentionRunsOnTheDeviceAndMatchesTheCpu) {
  const bool storage8 = VulkanDevice().device->metadata.at("8bit_storage") == "1";
  const bool half = VulkanDevice().device->metadata.at("float16") == "1";
  struct Case {
    const char* name;
    AttentionSpec spec;
    int64_t symbolic_size;
  };
  std::vector<Case> cases = {
      {"additive mask", {}, 2},
      {"130 keys, head 80", {.seq = 130, .heads = 2, .head = 80}, 2},
      {"one decoding step over cached keys", {.seq = 70, .heads = 2, .head = 16, .q_seq = 1}, 1},
      {"no mask, batch 3", {.seq = 9, .heads = 4, .head = 32, .mask = false}, 3},
      {"head 512 (four keys per chunk)", {.seq = 11, .heads = 1, .head = 512}, 1},
  };
  if (storage8) cases.push_back({"SDPA Boolean mask", {.seq = 66, .heads = 2, .head = 64, .sdpa = true}, 2});
  if (half) cases.push_back({"float16", {.seq = 40, .heads = 3, .head = 64, .half = true}, 2});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PassTestGraph g = AttentionGraph(c.spec);
    const std::string bytes = g.Serialize();
    SessionOptions options, unfused;
    options.AddProvider(kVulkanEpName);
    unfused.AddProvider(kVulkanEpName, {{"fused_attention", "0"}});
    Session vulkan(TestEnv(), bytes.data(), bytes.size(), options);
    size_t fused = 0;
    for (const PartitionEntry& e : vulkan.Partition())
      if (e.op_type == "Attention" && e.domain == "ai.tessera" && e.ep == kVulkanEpName) ++fused;
    EXPECT_EQ(fused, 1u);
    for (const PartitionEntry& e : Session(TestEnv(), bytes.data(), bytes.size(), unfused).Partition())
      EXPECT_NE(e.op_type, "Attention") << "fused with fused_attention = 0";
    Session reference(TestEnv(), bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
    const Session::NamedValues feeds = g.Feeds(c.symbolic_size);
    const std::vector<Value> got = vulkan.Run(feeds), want = reference.Run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(CompareTensors(want[i].tensor(), got[i].tensor(), c.spec.half ? 2e-2 : 1e-5, c.spec.half ? 2e-2 : 1e-4), "")
          << "output " << i;
  }
  const PassTestGraph step = DecodingStepGraph({.heads = 2, .positions = 20, .head = 8});
  const std::string bytes = step.Serialize();
  SessionOptions options;
  options.AddProvider(kVulkanEpName, {{"fused_attention", "1"}});
  Session vulkan(TestEnv(), bytes.data(), bytes.size(), options);
  size_t attention = 0, scatters = 0;
  for (const PartitionEntry& e : vulkan.Partition()) {
    if (e.op_type == "Attention" && e.ep == kVulkanEpName) ++attention;
    if (e.op_type == "ScatterElements") ++scatters;
  }
  EXPECT_EQ(attention, 1u);
  EXPECT_EQ(scatters, 2u);
  Session reference(TestEnv(), bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
  const Session::NamedValues feeds = step.Feeds();
  const std::vector<Value> got = vulkan.Run(feeds), want = reference.Run(feeds);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(CompareTensors(want[i].tensor(), got[i].tensor(), 1e-5, 1e-4), "") << "output " << i;
}

// float16 attention at the edges of attention_coop.comp's tiles (on devices with cooperative matrices; lavapipe runs
// these through attention.comp): 16-row query blocks and 32- / 16-key chunks cut short, head sizes padded to 16 (40),
// both variants (64, and 80 / 128 on the 128 one), a mask row per query, a decoding step, a head size that is no
// multiple of 8 (the per-row shader), and torch SDPA's Boolean mask with a fully masked query (zeros through the
// absorbed NaN guard).
TEST_F(VulkanSessionTest, Float16FusedAttentionMatchesTheCpuAtEveryTileEdge) {
  if (VulkanDevice().device->metadata.at("float16") != "1") GTEST_SKIP() << "the device has no float16 kernels";
  const bool storage8 = VulkanDevice().device->metadata.at("8bit_storage") == "1";
  struct Case {
    const char* name;
    AttentionSpec spec;
    int64_t batch;
    bool mask_first_query = false;  // every key of query 0 masked (SDPA's mask input is [batch, 1, queries, keys])
  };
  std::vector<Case> cases = {
      {"BERT-base's shape", {.seq = 128, .heads = 12, .head = 64, .half = true}, 1},
      {"130 keys and queries, head 80", {.seq = 130, .heads = 2, .head = 80, .half = true}, 1},
      {"77 keys, head 40, a mask row per query",
       {.seq = 77, .heads = 3, .head = 40, .query_mask = true, .half = true}, 2},
      {"17 keys, head 128, no mask", {.seq = 17, .heads = 2, .head = 128, .mask = false, .half = true}, 1},
      {"head 20 (the per-row shader)", {.seq = 9, .heads = 2, .head = 20, .half = true}, 2},
      {"one decoding step over 70 keys", {.seq = 70, .heads = 4, .head = 64, .q_seq = 1, .half = true}, 1},
  };
  if (storage8)
    cases.push_back(
        {"SDPA Boolean mask, query 0 fully masked", {.seq = 50, .heads = 2, .head = 64, .sdpa = true, .half = true}, 2,
         true});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PassTestGraph g = AttentionGraph(c.spec);
    const std::string bytes = g.Serialize();
    SessionOptions options;
    options.AddProvider(kVulkanEpName, {{"fused_attention", "1"}});
    Session vulkan(TestEnv(), bytes.data(), bytes.size(), options);
    size_t fused = 0;
    for (const PartitionEntry& e : vulkan.Partition())
      if (e.op_type == "Attention" && e.domain == "ai.tessera" && e.ep == kVulkanEpName) ++fused;
    EXPECT_EQ(fused, 1u);
    Session reference(TestEnv(), bytes.data(), bytes.size(), OptionsAt(OptimizationLevel::kNone));
    Session::NamedValues feeds = g.Feeds(c.batch);
    if (c.mask_first_query)
      for (auto& [name, value] : feeds) {
        if (name != "m") continue;
        Tensor& m = value.tensor();
        const int64_t queries = m.shape().dims()[2], keys = m.shape().dims()[3];
        float* data = m.Data<float>();
        for (int64_t b = 0; b < m.shape().dims()[0]; ++b)
          for (int64_t j = 0; j < keys; ++j) data[b * queries * keys + j] = -2.0f;  // below the graph's -1.5
      }
    const std::vector<Value> got = vulkan.Run(feeds), want = reference.Run(feeds);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(CompareTensors(want[0].tensor(), got[0].tensor(), 2e-2, 2e-2), "");
    if (c.mask_first_query) {
      const float* y = got[0].tensor().Data<float>();  // [batch, queries, heads, head]: query 0 of batch 0 first
      for (int64_t f = 0; f < c.spec.heads * c.spec.head; ++f) ASSERT_EQ(y[f], 0.0f) << "feature " << f;
    }
  }
}

TEST_F(VulkanSessionTest, ConcurrentRunsOnOneSession) {
  const std::string model = SmallResidualNet();
  SessionOptions options;
  options.AddProvider(kVulkanEpName);
  Session session = MakeSession(model, options, TestEnv());
  std::vector<Tensor> inputs, expected;
  for (uint32_t i = 0; i < 4; ++i) {
    inputs.push_back(RandomTensor(DataType::kFloat, {2, 3, 16, 16}, 20 + i));
    expected.push_back(RunModel(model, "cpu", {{"x", inputs.back()}})[0]);
  }
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) {
        const Tensor y = session.Run({{"x", inputs[t]}})[0].tensor();
        std::string diff = CompareTensors(expected[t], y, 1e-5, 1e-4);
        if (!diff.empty()) errors[t] = diff;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

TEST_F(VulkanSessionTest, UnsupportedNodesFallBackToTheCpu) {
  // A 3-D convolution (5-D input) has no Vulkan kernel: it runs on the CPU, with copies around it.
  GraphBuilder b(17);
  b.FloatInitializer("w", {2, 1, 2, 2, 2}, RandomTensor(DataType::kFloat, {2, 1, 2, 2, 2}, 1).ToVector<float>());
  b.Input("x", {1, 1, 4, 4, 4})
      .Node("Relu", {"x"}, {"r"})
      .Node("Conv", {"r", "w"}, {"c"})
      .Node("Sigmoid", {"c"}, {"y"})
      .Output("y");
  const std::string model = b.Serialize();
  SessionOptions options;
  options.AddProvider(kVulkanEpName);
  Session session = MakeSession(model, options, TestEnv());
  std::map<std::string, std::string> placed;
  for (const PartitionEntry& e : session.Partition())
    if (!e.is_copy) placed[e.op_type == "FusedConv" ? "Conv" : e.op_type] = e.ep;  // Conv + Sigmoid may be fused
  EXPECT_EQ(placed["Conv"], "CPUExecutionProvider");
  EXPECT_EQ(placed["Relu"], kVulkanEpName);
  const Tensor x = RandomTensor(DataType::kFloat, {1, 1, 4, 4, 4}, 2);
  EXPECT_EQ(CompareTensors(RunModel(model, "cpu", {{"x", x}})[0], RunModel(model, "vulkan", {{"x", x}})[0], 1e-6, 1e-5), "");
}

TEST_F(VulkanSessionTest, BadOptionsAndInputsGiveClearErrors) {
  SessionOptions options;
  options.AddProvider(kVulkanEpName, {{"no_such_option", "1"}});
  try {
    MakeSession(SmallResidualNet(), options, TestEnv());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_option"), std::string::npos) << e.what();
  }
  // A wrong input shape fails the run with a message naming the node; the session stays usable.
  SessionOptions good;
  good.AddProvider(kVulkanEpName);
  Session session = MakeSession(SmallResidualNet(), good, TestEnv());
  EXPECT_THROW(session.Run({{"x", RandomTensor(DataType::kFloat, {2, 5, 16, 16}, 3)}}), Error);
  const Tensor x = RandomTensor(DataType::kFloat, {2, 3, 16, 16}, 4);
  EXPECT_EQ(CompareTensors(RunModel(SmallResidualNet(), "cpu", {{"x", x}})[0], session.Run({{"x", x}})[0].tensor(), 1e-5,
                           1e-4),
            "");
}

TEST_F(VulkanSessionTest, MemoryLimitGivesOutOfMemory) {
  SessionOptions options;
  options.AddProvider(kVulkanEpName, {{"memory_limit_bytes", "4096"}});
  try {  // the preparation run at creation (static shapes) or the first run needs more than 4 KiB
    Session session = MakeSession(SmallResidualNet(), options, TestEnv());
    session.Run({{"x", RandomTensor(DataType::kFloat, {2, 3, 16, 16}, 5)}});
    FAIL() << "expected kOutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
  }
}

TEST_F(VulkanSessionTest, DefaultModelMatchesTheCpu) {
  const std::filesystem::path model = std::filesystem::path(TESSERA_SOURCE_DIR) / ".models/default.onnx";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is not there (scripts/setup.sh fetches it)";
  const Tensor x = RandomTensor(DataType::kFloat, {1, 3, 64, 96}, 6, 0, 1);
  SessionOptions cpu_options, vulkan_options;
  vulkan_options.AddProvider(kVulkanEpName);
  Session cpu(TestEnv(), model, cpu_options);
  Session vulkan(TestEnv(), model, vulkan_options);
  size_t on_vulkan = 0, nodes = 0;
  for (const PartitionEntry& e : vulkan.Partition()) {
    if (e.is_copy) continue;
    ++nodes;
    on_vulkan += e.ep == kVulkanEpName;
  }
  std::string elsewhere;
  for (const PartitionEntry& e : vulkan.Partition())
    if (!e.is_copy && e.ep != kVulkanEpName) elsewhere += " " + e.op_type + " '" + e.node_name + "' on " + e.ep;
  EXPECT_EQ(on_vulkan, nodes) << "every node of PP-OCRv4 det runs on the Vulkan EP; not:" << elsewhere;
  const Tensor expected = cpu.Run({{"x", x}})[0].tensor();
  const Tensor actual = vulkan.Run({{"x", x}})[0].tensor();
  EXPECT_EQ(CompareTensors(expected, actual, 1e-4, 1e-4), "");
}

TEST_F(VulkanSessionTest, LargeTensorsFreedWhenTheirCopiesComplete) {
  // Outputs over the session's same-stream cache (16 MiB a block) are freed with a fence on the stream once their
  // copy to the host has completed -- from inside the stream's own bookkeeping, which must not hold its lock then
  // (the fence is an event recorded on that stream).
  GraphBuilder b(17);
  b.Input("x", {5, 1024, 1024}).Node("Relu", {"x"}, {"r"}).Node("Neg", {"r"}, {"y"}).Output("y");
  const std::string model = b.Serialize();
  SessionOptions options;
  options.AddProvider(kVulkanEpName);
  Session session = MakeSession(model, options, TestEnv());
  const Tensor x = RandomTensor(DataType::kFloat, {5, 1024, 1024}, 8);
  for (int run = 0; run < 4; ++run) {
    const Tensor y = session.Run({{"x", x}})[0].tensor();
    ASSERT_EQ(y.NumElements(), x.NumElements());
    EXPECT_EQ(y.Data<float>()[12345], -std::max(x.Data<float>()[12345], 0.0f));
  }
}

TEST_F(VulkanSessionTest, SmallBertRecordedOnceMatchesTheCpu) {
  // BERT's attention mask (Cast from int64), its shape subgraph (left on the CPU) and its position ids (computed on
  // the host, uploaded by Gather) leave the whole run capturable into recorded command buffers.
  const char* models_dir = std::getenv("TESSERA_MODELS_DIR");
  if (models_dir == nullptr) GTEST_SKIP() << "TESSERA_MODELS_DIR is not set (scripts/test.sh exports the models)";
  const std::filesystem::path model = std::filesystem::path(models_dir) / "bert_base" / "model.onnx";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " does not exist";
  Tensor ids = RandomTensor(DataType::kInt64, {2, 16}, 7, 0, 999);
  Tensor mask = Tensor::Allocate(DataType::kInt64, {2, 16});
  for (int64_t i = 0; i < 32; ++i) mask.Data<int64_t>()[i] = i < 28 ? 1 : 0;  // padding at the end of row 2
  SessionOptions cpu_options, vulkan_options;
  vulkan_options.AddProvider(kVulkanEpName, {{"enable_graph_capture", "1"}});
  Session cpu(TestEnv(), model, cpu_options);
  Session vulkan(TestEnv(), model, vulkan_options);
  const std::vector<Value> expected = cpu.Run({{"input_ids", ids}, {"attention_mask", mask}});
  Tensor device_ids = ToVulkan(ids), device_mask = ToVulkan(mask);
  IoBinding binding = vulkan.CreateIoBinding();
  binding.BindInput("input_ids", device_ids);
  binding.BindInput("attention_mask", device_mask);
  for (const ValueInfo& output : vulkan.outputs()) binding.BindOutput(output.name, VulkanDevice().device_memory);
  for (int run = 0; run < 3; ++run) {  // warm-up, capture, replay
    vulkan.Run(binding);
    binding.SynchronizeOutputs();
    ASSERT_EQ(binding.BoundOutputs().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(CompareTensors(expected[i].tensor(), ToHostTensor(binding.BoundOutputs()[i].tensor()), 1e-4, 1e-4), "")
          << "run " << run << ", output " << i;
  }
  EXPECT_NE(vulkan.GraphStatus().find("explicit"), std::string::npos) << vulkan.GraphStatus();
}

}  // namespace
}  // namespace tessera::test
