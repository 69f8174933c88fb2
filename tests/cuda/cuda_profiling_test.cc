// Profiling on the CUDA EP: device times from CUDA events for every CUDA step, none recorded into a CUDA
// graph capture, and NVTX ranges (TESSERA_NVTX=1) that leave runs and captures working.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cuda/cuda_test_util.h"
#include "session/profile_reader.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
using CudaProfilingTest = CudaTest;

const Shape kInputShape{1, 3, 16, 16};

class ProfileDir {
 public:
  ProfileDir() : path_(fs::temp_directory_path() / ("tessera_cuda_profiling_" + std::to_string(getpid()))) {
    fs::create_directories(path_);
  }
  ~ProfileDir() { fs::remove_all(path_); }
  std::string prefix() const { return (path_ / "prof").string(); }

 private:
  fs::path path_;
};

// Sets TESSERA_NVTX for the scope (read when the EP is created).
class ScopedNvtx {
 public:
  ScopedNvtx() { setenv("TESSERA_NVTX", "1", 1); }
  ~ScopedNvtx() { unsetenv("TESSERA_NVTX"); }
};

SessionOptions ProfiledCuda(const ProfileDir& dir, bool graphs) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"enable_cuda_graph", graphs ? "1" : "0"}});
  options.enable_profiling = true;
  options.profile_file_prefix = dir.prefix();
  return options;
}

std::vector<ProfileEvent> Events(const Profile& profile, const std::string& category) {
  std::vector<ProfileEvent> out;
  for (const ProfileEvent& e : profile.events)
    if (e.phase == "X" && e.category == category) out.push_back(e);
  return out;
}

bool WithinSomeRun(const ProfileEvent& e, const Profile& profile) {
  for (const ProfileEvent& run : Events(profile, "Session"))
    if (run.name == "model_run" && e.ts_us >= run.ts_us - 0.002 && e.ts_us + e.dur_us <= run.ts_us + run.dur_us + 0.002)
      return true;
  return false;
}

TEST_F(CudaProfilingTest, EveryCudaStepHasADeviceTimeWithinItsRun) {
  ProfileDir dir;
  ScopedNvtx nvtx;  // NVTX ranges on as well: they must not disturb anything
  Session session = MakeSession(SmallConvNetModel(), ProfiledCuda(dir, false), TestEnv());
  for (uint32_t run = 0; run < 3; ++run) session.Run({{"x", RandomTensor(DataType::kFloat, kInputShape, run)}});
  const Profile profile = ReadProfile(session.EndProfiling());
  size_t cuda_steps = 0, cuda_device = 0;
  for (const ProfileEvent& e : Events(profile, "Node")) cuda_steps += e.provider() == kCudaEpName;
  ASSERT_GT(cuda_steps, 0u);
  for (const ProfileEvent& e : Events(profile, "Kernel")) {
    cuda_device += e.provider() == kCudaEpName;
    EXPECT_EQ(profile.thread_names.at(e.tid).rfind("CUDA stream", 0), 0u);
    EXPECT_GE(e.dur_us, 0);
    EXPECT_TRUE(WithinSomeRun(e, profile)) << e.name << " at " << e.ts_us;
  }
  EXPECT_EQ(cuda_device, cuda_steps);
}

TEST_F(CudaProfilingTest, NoDeviceTimerEventIsRecordedIntoACudaGraph) {
  ProfileDir dir;
  ScopedNvtx nvtx;
  Session session = MakeSession(SmallConvNetModel(), ProfiledCuda(dir, true), TestEnv());
  Session reference = MakeSession(SmallConvNetModel(), SessionOptions{}.AddProvider(kCudaEpName), TestEnv());
  Tensor input = ToCuda(RandomTensor(DataType::kFloat, kInputShape, 1));
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("x", input);
  binding.BindOutput("prob", MemoryInfo::Host());
  for (uint32_t run = 0; run < 4; ++run) {  // warm-up, capture + replay, replays
    const Tensor x = RandomTensor(DataType::kFloat, kInputShape, 10 + run);
    TestEnv().CopyTensors({&x, 1}, {&input, 1}, nullptr);
    session.Run(binding);
    const Tensor expected = reference.Run({{"x", x}})[0].tensor();
    EXPECT_EQ(CompareTensors(expected, binding.BoundOutputs()[0].tensor(), 1e-3, 1e-3), "") << "run " << run;
  }
  const Profile profile = ReadProfile(session.EndProfiling());
  size_t model_runs = 0, steps_per_run = 0;
  for (const ProfileEvent& e : Events(profile, "Session")) model_runs += e.name == "model_run";
  EXPECT_EQ(model_runs, 4u);
  for (const PartitionEntry& e : session.Partition()) steps_per_run += !e.is_copy;
  EXPECT_EQ(Events(profile, "Kernel").size(), steps_per_run);  // the warm-up only
}

}  // namespace
}  // namespace tessera::test
