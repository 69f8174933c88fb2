// Same-stream reuse (SessionOptions::stream_cache_bytes, StreamAllocator): on the simulated device, once a
// session has run a model, further runs of the same shapes allocate nothing from the shared arena, and give
// the same results as a session without the cache, also from several threads.
#include <gtest/gtest.h>

#include <thread>

#include "test_env.h"
#include "unit/session/graph_builder.h"

namespace tessera::test {
namespace {

// y = relu((a @ b) + a) @ b: intermediates of two sizes on the device.
std::string ChainModel() {
  return GraphBuilder()
      .Input("a", {16, 32})
      .Input("b", {32, 32})
      .Node("MatMul", {"a", "b"}, {"t"})
      .Node("Add", {"t", "a"}, {"u"})
      .Node("Relu", {"u"}, {"v"})
      .Node("MatMul", {"v", "b"}, {"y"})
      .Output("y")
      .Serialize();
}

Tensor Values(std::vector<int64_t> shape, int shift) {
  std::vector<float> v(static_cast<size_t>(shape[0] * shape[1]));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((static_cast<int>(i) * 5 + shift) % 7 - 3);
  return Tensor::FromVector<float>(Shape(shape), v);
}

struct Arena {
  std::unique_ptr<Environment> env;
  AllocatorPtr shared;
};

// A session on the testing device whose device memory comes from an arena shared through the environment, so
// that the test can read the arena's statistics.
Arena SharedArena() {
  Arena a{std::make_unique<Environment>(LogLevel::kWarning), nullptr};
  a.env->RegisterEpLibrary("testing", TESSERA_TESTING_EP_PATH);
  for (const EpDevice* d : a.env->GetEpDevices())
    if (d->ep_name == kTestingEpName) {
      ArenaOptions options;
      options.stream_fences = true;
      a.shared = a.env->CreateSharedAllocator(*d, MemoryType::kDefault, &options);
    }
  return a;
}

SessionOptions Options(int64_t stream_cache_bytes) {
  SessionOptions options;
  options.AddProvider(kTestingEpName);
  options.config["session.use_env_allocators"] = "1";
  options.stream_cache_bytes = stream_cache_bytes;
  return options;
}

// Arena allocations of runs 3 to 6 (after two runs that fill the cache); the outputs must match `want`.
size_t SteadyStateAllocations(int64_t stream_cache_bytes, const std::vector<float>& want) {
  Arena arena = SharedArena();
  EXPECT_NE(arena.shared, nullptr);
  Session session = MakeSession(ChainModel(), Options(stream_cache_bytes), *arena.env);
  const Session::NamedValues feeds = {{"a", Values({16, 32}, 1)}, {"b", Values({32, 32}, 2)}};
  for (int run = 0; run < 2; ++run) session.Run(feeds);
  const size_t before = arena.shared->Stats().num_allocs;
  for (int run = 0; run < 4; ++run)
    EXPECT_EQ(session.Run(feeds)[0].tensor().ToVector<float>(), want) << "cache " << stream_cache_bytes;
  return arena.shared->Stats().num_allocs - before;
}

std::vector<float> Reference() {
  Session cpu = MakeSession(ChainModel(), OptionsFor("cpu"), TestEnv());
  return cpu.Run({{"a", Values({16, 32}, 1)}, {"b", Values({32, 32}, 2)}})[0].tensor().ToVector<float>();
}

TEST(StreamCacheTest, RunsInSteadyStateAllocateNothingFromTheArena) {
  const std::vector<float> want = Reference();
  EXPECT_GT(SteadyStateAllocations(0, want), 0u) << "without the cache every run allocates from the arena";
  EXPECT_EQ(SteadyStateAllocations(-1, want), 0u);
}

TEST(StreamCacheTest, ConcurrentRunsWithTheCacheGiveTheSameResults) {
  const std::vector<float> want = Reference();
  Session session = MakeSession(ChainModel(), Options(-1), TestEnv());
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 25; ++run) {
        std::vector<Value> out = session.Run({{"a", Values({16, 32}, 1)}, {"b", Values({32, 32}, 2)}});
        if (out[0].tensor().ToVector<float>() != want) ++wrong[t];
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST(StreamCacheTest, ANegativeSizeOtherThanMinusOneIsRefused) {
  try {
    MakeSession(ChainModel(), Options(-2), TestEnv());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stream_cache_bytes is -2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::test
