// The CUDA EP's tuning cache file (src/providers/cuda/tuning_results.h): plain C++, tested without a GPU. What a
// convolution stores and how a later session uses it is tested on the GPU (tests/cuda/cuda_conv_tuning_test.cc).
#include "providers/cuda/tuning_results.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::cuda {
namespace {

std::vector<std::string> Lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class TuningResultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("tessera_tuning_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  std::filesystem::path folder_;
};

TEST_F(TuningResultsTest, ResultsOutliveTheirEpInTheFile) {
  const std::string path = (folder_ / "sub" / "cache.tsv").string();  // folders are created
  {
    TuningResults first;
    std::string why;
    ASSERT_TRUE(first.AttachFile(path, "GPU A, cuDNN 9", &why)) << why;
    EXPECT_EQ(first.loaded(), 0u);
    first.Store("conv;x 1 8", "graph 0 3");
    first.Store("conv;x 1 16", "legacy 1 0");
    first.Store("conv;x 1 8", "graph 0 5");  // the first result stands
    EXPECT_EQ(first.Find("conv;x 1 8"), "graph 0 3");
  }
  const std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("GPU A, cuDNN 9"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "conv;x 1 8\tgraph 0 3");
  TuningResults second;
  std::string why;
  ASSERT_TRUE(second.AttachFile(path, "GPU A, cuDNN 9", &why)) << why;
  EXPECT_EQ(second.loaded(), 2u);
  EXPECT_EQ(second.Find("conv;x 1 8"), "graph 0 3");
  EXPECT_EQ(second.Find("conv;x 1 16"), "legacy 1 0");
  EXPECT_EQ(second.Find("conv;x 1 32"), std::nullopt);
}

TEST_F(TuningResultsTest, AReplacedResultIsAppendedAndWinsOnTheNextRead) {
  const std::string path = (folder_ / "cache.tsv").string();
  std::string why;
  {
    TuningResults results;
    ASSERT_TRUE(results.AttachFile(path, "id", &why)) << why;
    results.Store("k", "graph 0 9");
    results.Store("k", "graph 0 1", /*replace=*/true);  // the stored value no longer applied
    EXPECT_EQ(results.Find("k"), "graph 0 1");
  }
  EXPECT_EQ(Lines(path).size(), 3u);
  TuningResults again;
  ASSERT_TRUE(again.AttachFile(path, "id", &why)) << why;
  EXPECT_EQ(again.Find("k"), "graph 0 1");
}

TEST_F(TuningResultsTest, AFileOfAnotherGpuOrFormatIsStartedAnew) {
  const std::string path = (folder_ / "cache.tsv").string();
  std::string why;
  {
    TuningResults results;
    ASSERT_TRUE(results.AttachFile(path, "GPU A", &why)) << why;
    results.Store("k", "v");
  }
  TuningResults other;
  ASSERT_TRUE(other.AttachFile(path, "GPU B", &why)) << why;
  EXPECT_EQ(other.loaded(), 0u);
  EXPECT_EQ(other.Find("k"), std::nullopt);
  const std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("GPU B"), std::string::npos);
}

TEST_F(TuningResultsTest, BrokenLinesAreSkippedAndUnwritableFilesReported) {
  const std::string path = (folder_ / "cache.tsv").string();
  std::string why;
  {
    TuningResults results;
    ASSERT_TRUE(results.AttachFile(path, "id", &why)) << why;
    results.Store("good", "1");
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "a line cut short by a crash\n\tno key\n";
  }
  TuningResults read;
  ASSERT_TRUE(read.AttachFile(path, "id", &why)) << why;
  EXPECT_EQ(read.loaded(), 1u);
  EXPECT_EQ(read.Find("good"), "1");
  // A path under a regular file cannot be created: the results stay in memory and say why.
  TuningResults blocked;
  EXPECT_FALSE(blocked.AttachFile(path + "/nested/cache.tsv", "id", &why));
  EXPECT_NE(why.find("cannot"), std::string::npos) << why;
  blocked.Store("k", "v");
  EXPECT_EQ(blocked.Find("k"), "v");
}

TEST_F(TuningResultsTest, DefaultPathFollowsTheCacheEnvironment) {
  const auto saved = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
  };
  const std::optional<std::string> cache_dir = saved("TESSERA_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME");
  setenv("TESSERA_CACHE_DIR", folder_.c_str(), 1);
  EXPECT_EQ(DefaultTuningCachePath("NVIDIA H100 80GB HBM3 sm90 cuDNN 91900"),
            (folder_ / "cuda_tuning_NVIDIA_H100_80GB_HBM3_sm90_cuDNN_91900.tsv").string());
  setenv("TESSERA_CACHE_DIR", "", 1);  // set and empty: no default cache
  EXPECT_EQ(DefaultTuningCachePath("GPU"), "");
  unsetenv("TESSERA_CACHE_DIR");
  setenv("XDG_CACHE_HOME", folder_.c_str(), 1);
  EXPECT_EQ(DefaultTuningCachePath("GPU/x"), (folder_ / "tessera" / "cuda_tuning_GPU_x.tsv").string());
  for (const auto& [name, value] : {std::pair{"TESSERA_CACHE_DIR", cache_dir}, std::pair{"XDG_CACHE_HOME", xdg}}) {
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
}

}  // namespace
}  // namespace tessera::cuda
