// Concurrent runs on the CUDA EP (session/stream_pool.h, kEpRunStreams): runs from several threads take stream
// sets of their own, each with its own cuDNN and cuBLAS handles and workspaces, while the kernels' cached plans,
// variant packs and KRSC filters are shared. Results must be those of serial runs, bit for bit.
#include <cuda_runtime_api.h>

#include <thread>

#include "cuda/cuda_test_util.h"
#include "threads_at_once.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

using CudaStreamSetsTest = CudaTest;

constexpr int kThreads = 4;
constexpr int kRuns = 12;

Tensor Input(int thread) { return RandomTensor(DataType::kFloat, {1, 3, 16, 16}, 100 + thread, -1.0, 1.0); }

// `runs` Run(feeds) calls on each of kThreads threads, released together; thread t feeds Input(t) and expects
// expected[t] bit for bit. Returns each thread's failure ("" when none).
std::vector<std::string> RunFromThreads(Session& session, const std::vector<std::vector<float>>& expected, int runs) {
  return RunOnThreadsAtOnce(kThreads, [&](int t, const std::function<void()>& released) -> std::string {
    const Tensor x = Input(t);
    released();
    std::string failure;
    for (int r = 0; r < runs; ++r)
      if (session.Run({{"x", Value(x)}})[0].tensor().ToVector<float>() != expected[t])
        failure = "run " + std::to_string(r) + " differs from the serial run";
    return failure;
  });
}

void ExpectConcurrentRunsMatchSerialRuns(const ProviderOptions& provider_options) {
  SessionOptions options;
  options.AddProvider(kCudaEpName, provider_options);
  Session session = MakeSession(SmallConvNetModel(), options, TestEnv());
  std::vector<std::vector<float>> expected;
  for (int t = 0; t < kThreads; ++t)
    expected.push_back(session.Run({{"x", Value(Input(t))}})[0].tensor().ToVector<float>());
  ASSERT_EQ(session.StreamSets(), 1u);
  const std::vector<std::string> failures = RunFromThreads(session, expected, kRuns);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_GT(session.StreamSets(), 1u) << "runs released together shared one stream set";
}

TEST_F(CudaStreamSetsTest, ConcurrentRunsMatchSerialRunsNchw) {
  ExpectConcurrentRunsMatchSerialRuns({{"use_tf32", "0"}, {"prefer_nhwc", "0"}});
}

// NHWC: the KRSC copies of the filters are made on the first run's stream and read by every set.
TEST_F(CudaStreamSetsTest, ConcurrentRunsMatchSerialRunsNhwc) {
  ExpectConcurrentRunsMatchSerialRuns({{"use_tf32", "0"}, {"prefer_nhwc", "1"}});
}

TEST_F(CudaStreamSetsTest, ConcurrentFirstRunsOfNewShapesMatchSerialRuns) {
  // No serial warm-up of the concurrent session: every thread's first run may build the plans the others use.
  SessionOptions options;
  options.AddProvider(kCudaEpName, {{"use_tf32", "0"}, {"prefer_nhwc", "1"}});
  std::vector<std::vector<float>> expected;
  {
    Session serial = MakeSession(SmallConvNetModel(), options, TestEnv());
    for (int t = 0; t < kThreads; ++t)
      expected.push_back(serial.Run({{"x", Value(Input(t))}})[0].tensor().ToVector<float>());
  }
  Session session = MakeSession(SmallConvNetModel(), options, TestEnv());
  const std::vector<std::string> failures = RunFromThreads(session, expected, 3);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST_F(CudaStreamSetsTest, UserComputeStreamKeepsOneSet) {
  cudaStream_t user = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking), cudaSuccess);
  {
    SessionOptions options;
    options.AddProvider(kCudaEpName, {{"use_tf32", "0"},
                                      {"user_compute_stream", std::to_string(reinterpret_cast<uintptr_t>(user))}});
    Session session = MakeSession(SmallConvNetModel(), options, TestEnv());
    const std::vector<float> expected = session.Run({{"x", Value(Input(0))}})[0].tensor().ToVector<float>();
    std::vector<std::thread> threads;
    std::vector<int> wrong(kThreads, 0);
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        try {
          for (int r = 0; r < 4; ++r)
            wrong[t] += session.Run({{"x", Value(Input(0))}})[0].tensor().ToVector<float>() != expected;
        } catch (const std::exception&) {
          wrong[t] = -1;
        }
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
    EXPECT_EQ(session.StreamSets(), 1u);
  }
  cudaStreamDestroy(user);
}

}  // namespace
}  // namespace tessera::test
