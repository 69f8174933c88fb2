// do_copy_in_default_stream = 0: copies between host and GPU run on their own streams, ordered with the
// compute stream by events, and the device arena orders every reuse of a block after its last use.
#include <cuda_runtime_api.h>

#include <array>
#include <cmath>
#include <thread>

#include "cuda/cuda_test_util.h"
#include "unit/session/copy_race_model.h"

namespace tessera::test {
namespace {

using CudaCopyStreamsTest = CudaTest;

constexpr int64_t kN = 1024;

// stream_cache_bytes 0: kernels' freed blocks go back to the arena (not to the compute stream's reuse cache), so
// the copy can race for them.
SessionOptions CopyStreamOptions(int64_t stream_cache_bytes = 0) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"do_copy_in_default_stream", "0"}, {"use_tf32", "0"}});
  options.stream_cache_bytes = stream_cache_bytes;
  return options;
}

std::string RaceModel() { return CopyRaceModel(kN, "Sin"); }  // Sin has no CUDA kernel

Tensor Pattern(int modulus, int shift) { return CopyRacePattern(kN, modulus, shift); }

struct Expected {
  std::vector<float> y, z;
};

Expected Reference(const Tensor& a, const Tensor& b, const Tensor& c) {
  Session cpu = MakeSession(RaceModel(), OptionsFor("cpu"), TestEnv());
  std::vector<Value> out = cpu.Run({{"a", a}, {"b", b}, {"c", c}});
  return {out[0].tensor().ToVector<float>(), out[1].tensor().ToVector<float>()};
}

bool Matches(const std::vector<Value>& out, const Expected& want) {
  const std::vector<float> y = out[0].tensor().ToVector<float>(), z = out[1].tensor().ToVector<float>();
  if (y != want.y) return false;  // exact: integer products and sums
  for (size_t i = 0; i < z.size(); ++i)
    if (std::abs(z[i] - want.z[i]) > 1e-5f) return false;
  return true;
}

TEST_F(CudaCopyStreamsTest, ACopyReusingMemoryOfRunningKernelsWaitsForThem) {
  for (int64_t cache : {int64_t{0}, int64_t{-1}}) {
    Session session = MakeSession(RaceModel(), CopyStreamOptions(cache), TestEnv());
    for (int run = 0; run < 4; ++run) {
      const Tensor a = Pattern(5, run), b = Pattern(3, run + 1), c = Pattern(11, run + 2);
      EXPECT_TRUE(Matches(session.Run({{"a", a}, {"b", b}, {"c", c}}), Reference(a, b, c)))
          << "run " << run << ", stream_cache_bytes " << cache;
    }
  }
}

TEST_F(CudaCopyStreamsTest, ConcurrentRunsFromFourThreads) {
  Session session = MakeSession(RaceModel(), CopyStreamOptions(), TestEnv());
  constexpr int kThreads = 4, kRuns = 5;
  std::vector<Expected> want;
  std::vector<std::array<Tensor, 3>> inputs;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back({Pattern(5, t), Pattern(3, 2 * t), Pattern(11, t + 5)});
    want.push_back(Reference(inputs[t][0], inputs[t][1], inputs[t][2]));
  }
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < kRuns; ++r)
          if (!Matches(session.Run({{"a", inputs[t][0]}, {"b", inputs[t][1]}, {"c", inputs[t][2]}}), want[t]))
            failures[t] = "wrong result in run " + std::to_string(r);
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST_F(CudaCopyStreamsTest, AsyncRunWithHostOutputsIsCompleteAfterSessionSynchronize) {
  Session session = MakeSession(RaceModel(), CopyStreamOptions(), TestEnv());
  const Tensor a = Pattern(5, 1), b = Pattern(3, 2), c = Pattern(11, 3);
  IoBinding binding = session.CreateIoBinding();
  binding.BindInput("a", ToCuda(a));  // one feed already on the GPU, two copied in
  binding.BindInput("b", b);
  binding.BindInput("c", c);
  binding.BindOutput("y", MemoryInfo::Host());
  binding.BindOutput("z", MemoryInfo::Host());
  RunOptions async;
  async.synchronize = false;
  session.Run(binding, async);
  session.Synchronize();
  EXPECT_TRUE(Matches({binding.BoundOutputs()[0], binding.BoundOutputs()[1]}, Reference(a, b, c)));
}

TEST_F(CudaCopyStreamsTest, CopyStreamsExcludeCudaGraphs) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"do_copy_in_default_stream", "0"}, {"enable_cuda_graph", "1"}});
  try {
    MakeSession(RaceModel(), options, TestEnv());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("do_copy_in_default_stream"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("enable_cuda_graph"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::test
