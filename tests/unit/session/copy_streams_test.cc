// Copies on their own streams (the testing EP's copy_streams option, the CUDA EP's do_copy_in_default_stream
// = 0): results stay right while copies overlap kernels, because a block reused by a copy waits for its last
// use by a kernel on the compute stream (stream fences in the device arena).
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "test_env.h"
#include "unit/session/copy_race_model.h"

namespace tessera::test {
namespace {

constexpr int64_t kN = 160;  // slow enough on the simulated device (naive MatMul) for copies to race it

std::string RaceModel() { return CopyRaceModel(kN, "Sigmoid"); }

Tensor Pattern(int modulus, int shift) { return CopyRacePattern(kN, modulus, shift); }

std::vector<float> MatMul(const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<float> out(x.size(), 0.0f);
  for (int64_t i = 0; i < kN; ++i)
    for (int64_t k = 0; k < kN; ++k)
      for (int64_t j = 0; j < kN; ++j) out[i * kN + j] += x[i * kN + k] * w[k * kN + j];
  return out;
}

struct Expected {
  std::vector<float> y, z;
};

Expected Reference(const Tensor& a, const Tensor& b, const Tensor& c) {
  Expected e;
  e.y = MatMul(MatMul(a.ToVector<float>(), b.ToVector<float>()), b.ToVector<float>());
  for (float v : c.ToVector<float>()) e.z.push_back(2.0f / (1.0f + std::exp(-v)));
  return e;
}

// Largest difference, relative to the largest magnitude of `want` (the MatMul sums are exact small integers, so
// only the Sigmoid path differs, by rounding).
double MaxDiff(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return diff / scale;
}

// stream_cache_bytes 0: kernels' freed blocks go back to the arena (not to the compute stream's reuse cache), so
// the copy can race for them.
SessionOptions CopyStreamOptions(int64_t stream_cache_bytes = 0) {
  SessionOptions options;
  options.AddProvider(kTestingEpName, {{"copy_streams", "1"}});
  options.stream_cache_bytes = stream_cache_bytes;
  return options;
}

TEST(CopyStreamsTest, ACopyReusingMemoryOfRunningKernelsWaitsForThem) {
  for (int64_t cache : {int64_t{0}, int64_t{-1}}) {
    Session session = MakeSession(RaceModel(), CopyStreamOptions(cache), TestEnv());
    for (int run = 0; run < 3; ++run) {
      const Tensor a = Pattern(5, run), b = Pattern(3, 3 * run + 1), c = Pattern(11, run + 2);
      const Expected want = Reference(a, b, c);
      std::vector<Value> out = session.Run({{"a", a}, {"b", b}, {"c", c}});
      EXPECT_LT(MaxDiff(out[0].tensor().ToVector<float>(), want.y), 1e-6) << "run " << run << ", cache " << cache;
      EXPECT_LT(MaxDiff(out[1].tensor().ToVector<float>(), want.z), 1e-6) << "run " << run << ", cache " << cache;
    }
  }
}

// The same model with its device arena shared through the Environment, so that the test can see the arena
// check the kernels' last use of a block the copy reuses (and wait for it when they still run).
TEST(CopyStreamsTest, TheSharedArenaCountsItsWaitsAcrossStreams) {
  Environment env(LogLevel::kWarning);
  env.RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
  const EpDevice* device = nullptr;
  for (const EpDevice* d : env.GetEpDevices())
    if (d->ep_name == kTestingEpName) device = d;
  ASSERT_NE(device, nullptr);
  ArenaOptions arena;
  arena.stream_fences = true;
  AllocatorPtr shared = env.CreateSharedAllocator(*device, MemoryType::kDefault, &arena);
  SessionOptions options = CopyStreamOptions();
  options.config["session.use_env_allocators"] = "1";
  {
    Session session = MakeSession(RaceModel(), options, env);
    const Tensor a = Pattern(5, 0), b = Pattern(3, 1), c = Pattern(11, 2);
    const Expected want = Reference(a, b, c);
    std::vector<Value> out = session.Run({{"a", a}, {"b", b}, {"c", c}});
    EXPECT_LT(MaxDiff(out[0].tensor().ToVector<float>(), want.y), 1e-6);
    EXPECT_LT(MaxDiff(out[1].tensor().ToVector<float>(), want.z), 1e-6);
  }
  // Whether the copy had to wait depends on whether the MatMuls were still running when it was queued (on a
  // loaded machine they may be done); that the arena checked their last use does not.
  const AllocatorStats stats = shared->Stats();
  EXPECT_GT(stats.num_foreign_fences, 0u) << "the copy of s reused memory last used by a MatMul (" << stats.num_allocs
                                          << " allocations, " << stats.bytes_reserved << " bytes reserved)";
  EXPECT_LE(stats.num_stream_waits, stats.num_foreign_fences);
}

TEST(CopyStreamsTest, ConcurrentRunsWithCopyStreamsGiveTheRightResults) {
  Session session = MakeSession(RaceModel(), CopyStreamOptions(), TestEnv());
  constexpr int kThreads = 4, kRuns = 3;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        const Tensor a = Pattern(5, t), b = Pattern(3, 2 * t + 1), c = Pattern(11, t + 3);
        const Expected want = Reference(a, b, c);
        for (int r = 0; r < kRuns; ++r) {
          std::vector<Value> out = session.Run({{"a", a}, {"b", b}, {"c", c}});
          if (MaxDiff(out[0].tensor().ToVector<float>(), want.y) > 1e-6 ||
              MaxDiff(out[1].tensor().ToVector<float>(), want.z) > 1e-6)
            failures[t] = "wrong result in run " + std::to_string(r);
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(CopyStreamsTest, AsyncRunWithHostOutputsIsCompleteAfterSessionSynchronize) {
  Session session = MakeSession(RaceModel(), CopyStreamOptions(), TestEnv());
  const Tensor a = Pattern(5, 4), b = Pattern(3, 5), c = Pattern(11, 6);
  const Expected want = Reference(a, b, c);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("a", a);
  binding.BindInput("b", b);
  binding.BindInput("c", c);
  binding.BindOutput("y", MemoryInfo::Host());
  binding.BindOutput("z", MemoryInfo::Host());
  RunOptions async;
  async.synchronize = false;
  session.Run(binding, async);
  session.Synchronize();  // includes the copy streams
  EXPECT_LT(MaxDiff(binding.BoundOutputs()[0].tensor().ToVector<float>(), want.y), 1e-6);
  EXPECT_LT(MaxDiff(binding.BoundOutputs()[1].tensor().ToVector<float>(), want.z), 1e-6);
}

TEST(CopyStreamsTest, CopyStreamsAndGraphCaptureAreRejectedTogether) {
  SessionOptions options;
  options.AddProvider(kTestingEpName, {{"copy_streams", "1"}, {"enable_graph_capture", "1"}});
  try {
    MakeSession(RaceModel(), options, TestEnv());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("copy_streams"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::test
