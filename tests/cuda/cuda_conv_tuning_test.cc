// Convolution searches shared by the nodes of one CUDA EP (src/providers/cuda/tuning_results.h): a node whose
// geometry, epilogue and options match a node searched before takes that node's choice without a search of its own
// (the verbose log says so), and computes the same result as the CPU EP. With a tuning cache file, a later session
// takes every choice from the file; a value that no longer applies is searched again and replaced.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaConvTuningTest = CudaTest;

// conv_a -> Relu -> conv_b -> Relu -> conv_c: a and b share their geometry (8 -> 8 channels, 3x3, pads 1) and
// epilogue (Relu), c differs (1x1, 8 -> 16). `state_shapes`: the model states the shapes of a, ra, b and rb (as
// exporters' shape inference does).
std::string RepeatedConvModel(bool state_shapes = false) {
  GraphBuilder builder;
  auto init = [&](const std::string& name, const Shape& shape, uint32_t seed) {
    builder.FloatInitializer(name, shape.dims(), RandomTensor(DataType::kFloat, shape, seed, -0.3, 0.3).ToVector<float>());
  };
  init("wa", {8, 8, 3, 3}, 1);
  init("wb", {8, 8, 3, 3}, 2);
  init("wc", {16, 8, 1, 1}, 3);
  builder.Input("x", {1, 8, 16, 16})
      .Node("Conv", {"x", "wa"}, {"a"}, "conv_a")
      .Node("Relu", {"a"}, {"ra"})
      .Node("Conv", {"ra", "wb"}, {"b"}, "conv_b")
      .Node("Relu", {"b"}, {"rb"})
      .Node("Conv", {"rb", "wc"}, {"y"}, "conv_c")
      .Output("y");
  onnx::ModelProto proto;
  if (!proto.ParseFromString(builder.Serialize())) throw std::runtime_error("cannot parse the built model");
  for (auto& node : *proto.mutable_graph()->mutable_node()) {
    if (node.op_type() != "Conv" || node.name() == "conv_c") continue;
    auto* pads = node.add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i) pads->add_ints(1);
  }
  if (state_shapes)
    for (const char* name : {"a", "ra", "b", "rb"}) {
      auto* info = proto.mutable_graph()->add_value_info();
      info->set_name(name);
      auto* tensor = info->mutable_type()->mutable_tensor_type();
      tensor->set_elem_type(onnx::TensorProto::FLOAT);
      for (int64_t d : {1, 8, 16, 16}) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    }
  return proto.SerializeAsString();
}

// Lines of `log` containing both `what` and `node`.
size_t CountLines(const std::string& log, const std::string& what, const std::string& node = "") {
  size_t count = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(what) != std::string::npos && line.find(node) != std::string::npos) ++count;
  return count;
}

TEST_F(CudaConvTuningTest, NodesOfOneGeometryShareOneSearch) {
  const std::string model = RepeatedConvModel();
  const Tensor x = RandomTensor(DataType::kFloat, {1, 8, 16, 16}, 7, -1.0, 1.0);
  Session cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  const Tensor want = cpu.Run({{"x", Value(x)}})[0].tensor();
  for (const char* nhwc : {"0", "1"}) {
    for (const char* search : {"EXHAUSTIVE", "HEURISTIC"}) {
      SessionOptions options;
      options.log_level = LogLevel::kVerbose;
      options.AddProvider(kCudaEpName, {{"use_tf32", "0"}, {"prefer_nhwc", nhwc}, {"cudnn_conv_algo_search", search}});
      // The plans are built at creation (the preparation run) or else in the first run: the log covers both.
      ::testing::internal::CaptureStderr();
      Session session = MakeSession(model, options, TestEnv());
      const Tensor got = session.Run({{"x", Value(x)}})[0].tensor();
      const std::string log = ::testing::internal::GetCapturedStderr();
      const std::string what = std::string("prefer_nhwc ") + nhwc + ", " + search;
      EXPECT_EQ(CompareTensors(want, got, 1e-4, 1e-4), "") << what;
      const std::string reused = "takes the stored choice for its geometry";
      EXPECT_EQ(CountLines(log, reused), 1u) << what << "\n" << log.substr(0, 6000);
      EXPECT_EQ(CountLines(log, reused, "conv_b"), 1u) << what;
      EXPECT_EQ(CompareTensors(want, session.Run({{"x", Value(x)}})[0].tensor(), 1e-4, 1e-4), "") << what << ", run 2";
    }
  }
}

std::vector<std::string> FileLines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(CudaConvTuningTest, TuningCacheFileServesLaterSessions) {
  const std::string model = RepeatedConvModel();
  const Tensor x = RandomTensor(DataType::kFloat, {1, 8, 16, 16}, 9, -1.0, 1.0);
  Session cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  const Tensor want = cpu.Run({{"x", Value(x)}})[0].tensor();
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tessera_cuda_tuning_" + std::to_string(::getpid()) + ".tsv");
  std::filesystem::remove(file);
  const auto run = [&](const std::string& what) {
    SessionOptions options;
    options.log_level = LogLevel::kVerbose;
    options.AddProvider(kCudaEpName, {{"use_tf32", "0"}, {"tuning_cache_file", file.string()}});
    ::testing::internal::CaptureStderr();
    Session session = MakeSession(model, options, TestEnv());
    EXPECT_EQ(CompareTensors(want, session.Run({{"x", Value(x)}})[0].tensor(), 1e-4, 1e-4), "") << what;
    return ::testing::internal::GetCapturedStderr();
  };
  const std::string stored = "takes the stored choice for its geometry";
  // 1: searches conv_a and conv_c (conv_b reuses conv_a's), writes both results.
  const std::string first = run("first session");
  EXPECT_EQ(CountLines(first, stored), 1u) << first.substr(0, 6000);
  std::vector<std::string> lines = FileLines(file);
  ASSERT_EQ(lines.size(), 3u) << "header + two geometries";
  // 2: a new EP reads both and searches nothing.
  const std::string second = run("second session");
  EXPECT_NE(second.find("2 result(s) read"), std::string::npos) << second.substr(0, 6000);
  EXPECT_EQ(CountLines(second, stored), 3u) << second.substr(0, 6000);
  EXPECT_EQ(FileLines(file).size(), 3u) << "nothing new to write";
  // 3: values that no longer apply (a position cuDNN does not offer) are searched again and replaced.
  {
    std::ofstream out(file, std::ios::trunc);
    out << lines[0] << "\n";
    for (size_t i = 1; i < lines.size(); ++i) out << lines[i].substr(0, lines[i].find('\t')) << "\tgraph 0 9999\n";
  }
  const std::string third = run("stale cache");
  EXPECT_EQ(CountLines(third, stored), 1u) << third.substr(0, 6000);  // conv_b takes conv_a's new search
  EXPECT_EQ(FileLines(file).size(), 5u) << "two replacements appended";
  const std::string fourth = run("after the replacements");
  EXPECT_EQ(CountLines(fourth, stored), 3u) << fourth.substr(0, 6000);
  std::filesystem::remove(file);
}

// SessionOptions::use_deterministic_compute: the search leaves out engines cuDNN marks nondeterministic; runs give
// the same bits every time and match the CPU EP.
TEST_F(CudaConvTuningTest, DeterministicComputeRunsGiveTheSameBits) {
  const std::string model = RepeatedConvModel();
  const Tensor x = RandomTensor(DataType::kFloat, {1, 8, 16, 16}, 11, -1.0, 1.0);
  Session cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  const Tensor want = cpu.Run({{"x", Value(x)}})[0].tensor();
  SessionOptions options;
  options.use_deterministic_compute = true;
  options.AddProvider(kCudaEpName, {{"use_tf32", "0"}, {"cudnn_conv_algo_search", "EXHAUSTIVE"}});
  Session session = MakeSession(model, options, TestEnv());
  const std::vector<float> first = session.Run({{"x", Value(x)}})[0].tensor().ToVector<float>();
  EXPECT_EQ(CompareTensors(want, Tensor::FromVector<float>(want.shape(), first), 1e-4, 1e-4), "");
  for (int run = 1; run < 6; ++run)
    EXPECT_EQ(session.Run({{"x", Value(x)}})[0].tensor().ToVector<float>(), first) << "run " << run;
}

// Convolutions whose shapes the session knows at creation ask for their cuDNN plans then, and worker threads build
// them (plan_build_threads); a node of the same convolution shares them. HEURISTIC asks for cuDNN's first
// proposal; EXHAUSTIVE asks only for what the tuning cache stores (a first session searches, a second one builds
// the stored configurations ahead). Results match the CPU EP with and without the workers, in NCHW and NHWC.
// Sessions whose runs execute the kernels (automatic graphs off): a replayed session takes cuDNN's legacy
// algorithms first (see the next test).
TEST_F(CudaConvTuningTest, PlansAreBuiltAheadFromTheStatedShapes) {
  const std::string model = RepeatedConvModel(/*state_shapes=*/true);
  const Tensor x = RandomTensor(DataType::kFloat, {1, 8, 16, 16}, 11, -1.0, 1.0);
  Session cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  const Tensor want = cpu.Run({{"x", Value(x)}})[0].tensor();
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / ("tessera_plans_ahead_" + std::to_string(getpid()) + ".tsv");
  for (const char* nhwc : {"0", "1"}) {
    for (const char* search : {"EXHAUSTIVE", "HEURISTIC"}) {
      for (const char* threads : {"0", "1", "4"}) {
        std::filesystem::remove(cache);
        for (int session_index = 0; session_index < 2; ++session_index) {
          SessionOptions options;
          options.log_level = LogLevel::kVerbose;
          options.AddProvider(kCudaEpName, {{"use_tf32", "0"},
                                            {"automatic_cuda_graphs", "0"},
                                            {"prefer_nhwc", nhwc},
                                            {"cudnn_conv_algo_search", search},
                                            {"plan_build_threads", threads},
                                            {"tuning_cache_file", cache.string()}});
          ::testing::internal::CaptureStderr();
          Tensor got;
          {
            Session session = MakeSession(model, options, TestEnv());
            got = session.Run({{"x", Value(x)}})[0].tensor();
          }  // workers and plans go with the session
          const std::string log = ::testing::internal::GetCapturedStderr();
          const std::string what = std::string("prefer_nhwc ") + nhwc + ", " + search + ", threads " + threads +
                                   ", session " + std::to_string(session_index);
          EXPECT_EQ(CompareTensors(want, got, 1e-4, 1e-4), "") << what;
          const bool searching = std::string(search) == "EXHAUSTIVE" && session_index == 0;
          const size_t expected = std::string(threads) == "0" || searching ? 0u : 3u;
          EXPECT_EQ(CountLines(log, "asks for its cuDNN plans ahead"), expected) << what << "\n" << log.substr(0, 6000);
        }
      }
    }
  }
  std::filesystem::remove(cache);
}

// Whether the session replays its runs decides what a convolution's search weighs: automatic graphs on a
// capturable model (the default) and explicit capture choose by device time among cuDNN's legacy algorithms (the
// fused call), graph-API plans and the depthwise kernel (";graphs 1" in the tuning key); a session whose runs
// execute the kernels (automatic graphs off, or a model they cannot hold: here a profiled session) chooses the
// host-cheap graph-API plans (";graphs 0"). Every way matches the CPU EP.
TEST_F(CudaConvTuningTest, ReplayedSessionsChooseByDeviceTime) {
  const std::string model = RepeatedConvModel();
  const Tensor x = RandomTensor(DataType::kFloat, {1, 8, 16, 16}, 13, -1.0, 1.0);
  Session cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  const Tensor want = cpu.Run({{"x", Value(x)}})[0].tensor();
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tessera_replayed_choice_" + std::to_string(::getpid()) + ".tsv");
  struct Case {
    const char* what;
    const char* automatic;
    bool profiled;
    const char* key_part;
  };
  for (const Case& c : {Case{"automatic graphs", "1", false, ";graphs 1;"},
                        Case{"automatic graphs off", "0", false, ";graphs 0;"},
                        Case{"automatic graphs, profiled (eager)", "1", true, ";graphs 0;"}}) {
    std::filesystem::remove(file);
    SessionOptions options;
    options.AddProvider(kCudaEpName, {{"use_tf32", "0"},
                                      {"automatic_cuda_graphs", c.automatic},
                                      {"tuning_cache_file", file.string()}});
    options.enable_profiling = c.profiled;
    options.profile_file_prefix = (std::filesystem::temp_directory_path() / "tessera_replayed_choice").string();
    {
      Session session = MakeSession(model, options, TestEnv());
      EXPECT_EQ(session.GraphStatus().rfind(c.profiled || c.automatic[0] == '0' ? "eager:" : "automatic:", 0), 0u)
          << c.what << ": " << session.GraphStatus();
      for (int run = 0; run < 3; ++run)
        EXPECT_EQ(CompareTensors(want, session.Run({{"x", Value(x)}})[0].tensor(), 1e-4, 1e-4), "")
            << c.what << ", run " << run;
      if (c.profiled) std::filesystem::remove(session.EndProfiling());
    }
    const std::vector<std::string> lines = FileLines(file);
    ASSERT_EQ(lines.size(), 3u) << c.what << ": header + two geometries";
    for (size_t i = 1; i < lines.size(); ++i) EXPECT_NE(lines[i].find(c.key_part), std::string::npos) << c.what << ": " << lines[i];
  }
  std::filesystem::remove(file);
}

// Stated shapes are a hint: plans built ahead for them go unused when a run brings other shapes, which are planned
// then.
TEST_F(CudaConvTuningTest, StatedShapesThatDisagreeWithTheRunAreRePlanned) {
  // The model states [1, 8, 16, 16] but the graph input is symbolic in its batch: a run with batch 2 plans for it.
  std::string model = RepeatedConvModel(/*state_shapes=*/true);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(model));
  proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_param("N");
  model = proto.SerializeAsString();
  const Tensor x = RandomTensor(DataType::kFloat, {2, 8, 16, 16}, 12, -1.0, 1.0);
  Session cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  const Tensor want = cpu.Run({{"x", Value(x)}})[0].tensor();
  SessionOptions options;
  options.AddProvider(kCudaEpName,
                      {{"use_tf32", "0"}, {"prefer_nhwc", "1"}, {"plan_build_threads", "2"}, {"tuning_cache_file", ""}});
  Session session = MakeSession(model, options, TestEnv());
  EXPECT_EQ(CompareTensors(want, session.Run({{"x", Value(x)}})[0].tensor(), 1e-4, 1e-4), "");
}

}  // namespace
}  // namespace tessera::test
