// cuBLASLt algorithm searches (src/providers/cuda/kernels/lt_matmul.h, provider option matmul_algo_search): a
// product's first run of a shape times the heuristic's proposals, nodes of the same shape on the EP take that
// choice without a search of their own, a tuning cache file serves later sessions, and every choice computes what
// the CPU EP computes.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaMatmulTuningTest = CudaTest;

// x [64, 256] -> MatMul w1 -> MatMul w2 (the same shape and epilogue) -> MatMul w3 [256, 128] (another shape).
std::string RepeatedProductModel() {
  GraphBuilder b;
  auto init = [&](const std::string& name, const Shape& shape, uint32_t seed) {
    b.FloatInitializer(name, shape.dims(), RandomTensor(DataType::kFloat, shape, seed, -0.1, 0.1).ToVector<float>());
  };
  init("w1", {256, 256}, 1);
  init("w2", {256, 256}, 2);
  init("w3", {256, 128}, 3);
  b.Input("x", {64, 256})
      .Node("MatMul", {"x", "w1"}, {"a"}, "product_a")
      .Node("MatMul", {"a", "w2"}, {"b"}, "product_b")
      .Node("MatMul", {"b", "w3"}, {"y"}, "product_c")
      .Output("y");
  return b.Serialize();
}

size_t CountLines(const std::string& log, const std::string& what) {
  size_t count = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(what) != std::string::npos) ++count;
  return count;
}

size_t CountFileLines(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path);
  size_t count = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(what, 0) == 0) ++count;
  return count;
}

TEST_F(CudaMatmulTuningTest, OneSearchPerShapeServesEveryNodeAndLaterSessions) {
  const std::string model = RepeatedProductModel();
  const Tensor x = RandomTensor(DataType::kFloat, {64, 256}, 7, -1.0, 1.0);
  Session cpu = MakeSession(model, OptionsFor("cpu"), TestEnv());
  const Tensor want = cpu.Run({{"x", Value(x)}})[0].tensor();
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tessera_matmul_tuning_" + std::to_string(::getpid()) + ".tsv");
  std::filesystem::remove(file);
  const auto run = [&](const std::string& search, const std::string& what) {
    SessionOptions options;
    options.log_level = LogLevel::kVerbose;
    options.AddProvider(kCudaEpName, {{"use_tf32", "0"}, {"tuning_cache_file", file.string()},
                                      {"matmul_algo_search", search}});
    ::testing::internal::CaptureStderr();
    Session session = MakeSession(model, options, TestEnv());
    EXPECT_EQ(CompareTensors(want, session.Run({{"x", Value(x)}})[0].tensor(), 1e-4, 1e-4), "") << what;
    EXPECT_EQ(CompareTensors(want, session.Run({{"x", Value(x)}})[0].tensor(), 1e-4, 1e-4), "") << what << ", run 2";
    return ::testing::internal::GetCapturedStderr();
  };
  const std::string searched = ": cuBLASLt m ";
  // HEURISTIC: nothing timed, nothing stored.
  const std::string heuristic = run("HEURISTIC", "heuristic");
  EXPECT_EQ(CountLines(heuristic, searched), 0u) << heuristic.substr(0, 6000);
  EXPECT_EQ(CountFileLines(file, "lt;"), 0u);
  // EXHAUSTIVE: the two shapes are timed once each (product_b takes product_a's choice) and stored.
  const std::string first = run("EXHAUSTIVE", "first exhaustive session");
  EXPECT_EQ(CountLines(first, searched), 2u) << first.substr(0, 6000);
  EXPECT_EQ(CountLines(first, "product_b: cuBLASLt"), 0u) << first.substr(0, 6000);
  EXPECT_EQ(CountFileLines(file, "lt;float;NN;m64;n256;k256"), 1u);
  EXPECT_EQ(CountFileLines(file, "lt;float;NN;m64;n128;k256"), 1u);
  // A later session reads both and times nothing.
  const std::string second = run("EXHAUSTIVE", "second session");
  EXPECT_EQ(CountLines(second, searched), 0u) << second.substr(0, 6000);
  EXPECT_EQ(CountFileLines(file, "lt;"), 2u) << "nothing new to write";
  std::filesystem::remove(file);
}

TEST_F(CudaMatmulTuningTest, AnUnknownSearchModeIsRejected) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"matmul_algo_search", "FASTEST"}});
  try {
    MakeSession(RepeatedProductModel(), options, TestEnv());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("EXHAUSTIVE or HEURISTIC"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::test
