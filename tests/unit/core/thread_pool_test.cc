#include "tessera/ep/thread_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace tessera {
namespace {

// Every (begin, end) ParallelFor handed to fn, sorted.
std::vector<std::pair<int64_t, int64_t>> RangesOf(const ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::mutex mutex;
  pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    std::lock_guard lock(mutex);
    ranges.emplace_back(begin, end);
  });
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 4, 7}) {
    const ThreadPool pool(threads);
    for (int64_t n : {1, 2, 5, 63, 64, 65, 1000, 100003}) {
      for (int64_t grain : {1, 7, 64, 4096}) {
        std::vector<std::atomic<int>> hits(n);
        pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " grain " << grain << " index " << i;
      }
    }
  }
}

TEST(ThreadPoolTest, RangesFollowPartitionOfAndHoldAtLeastGrain) {
  const ThreadPool pool(4);
  for (auto [n, grain] : {std::pair<int64_t, int64_t>{100, 10}, {1000000, 1}, {30, 10}, {129, 16}, {100003, 4096}}) {
    const ThreadPool::Partition p = ThreadPool::PartitionOf(n, grain, pool.num_threads());
    const auto ranges = RangesOf(pool, n, grain);
    ASSERT_EQ(static_cast<int64_t>(ranges.size()), p.chunks) << "n " << n << " grain " << grain;
    for (size_t i = 0; i < ranges.size(); ++i) {
      EXPECT_EQ(ranges[i].first, static_cast<int64_t>(i) * p.chunk);
      EXPECT_EQ(ranges[i].second, std::min(n, ranges[i].first + p.chunk));
      if (i + 1 < ranges.size()) {
        EXPECT_GE(ranges[i].second - ranges[i].first, grain);
      }
    }
  }
}

TEST(ThreadPoolTest, PartitionGivesLargeLoopsSeveralChunksPerThread) {
  // Few grains: one chunk per grain, never more than one per thread.
  EXPECT_EQ(ThreadPool::PartitionOf(30, 10, 4).chunks, 3);
  EXPECT_EQ(ThreadPool::PartitionOf(40, 10, 4).chunks, 4);
  // Fewer grains than threads, not a whole number of them: split evenly.
  EXPECT_EQ(ThreadPool::PartitionOf(20000, 16384, 2).chunks, 2);
  EXPECT_EQ(ThreadPool::PartitionOf(20000, 16384, 2).chunk, 10000);
  // Many grains: four chunks per thread, each still at least a grain.
  EXPECT_EQ(ThreadPool::PartitionOf(1000000, 1, 4).chunks, 16);
  EXPECT_EQ(ThreadPool::PartitionOf(1000000, 1, 4).chunk, 62500);
  // Some grains: a multiple of the thread count, equal shares (10 grains on 4 threads: 8 chunks, 2 per thread).
  EXPECT_EQ(ThreadPool::PartitionOf(100, 10, 4).chunk, 13);
  EXPECT_EQ(ThreadPool::PartitionOf(100, 10, 4).chunks, 8);
  EXPECT_EQ(ThreadPool::PartitionOf(73728, 16384, 2).chunks, 4);  // 4.5 grains on 2 threads: 2 chunks each
  EXPECT_EQ(ThreadPool::PartitionOf(73728, 16384, 2).chunk, 18432);
  EXPECT_EQ(ThreadPool::PartitionOf(0, 10, 4).chunks, 0);
  EXPECT_EQ(ThreadPool::PartitionOf(5, 0, 4).chunks, 3);  // grain <= 0 counts as 1: 4 ranges of 2, 2 and 1
}

TEST(ThreadPoolTest, SmallLoopsRunInlineOnTheCallingThread) {
  const ThreadPool pool(4);
  const std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  pool.ParallelFor(100, 100, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
    EXPECT_EQ(std::this_thread::get_id(), caller);
  });
  EXPECT_EQ(calls, 1);
  pool.ParallelFor(0, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 1);
}

// The Linux thread ids of the threads that run `threads` chunks at once (each chunk waits for all the others).
std::set<pid_t> ThreadsRunningAllChunks(const ThreadPool& pool) {
  const int threads = pool.num_threads();
  std::barrier all_started(threads);
  std::set<pid_t> ids;
  std::mutex mutex;
  pool.ParallelFor(threads, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard lock(mutex);
      ids.insert(gettid());
    }
    all_started.arrive_and_wait();
  });
  return ids;
}

// libgomp ends the surplus threads of its pool whenever a parallel region asks for fewer threads than the
// previous one and starts new ones for the next larger region. ParallelFor must keep its threads alive
// across loops of any size.
TEST(ThreadPoolTest, KeepsItsThreadsAcrossLoopsOfAnySize) {
  const ThreadPool pool(3);
  const std::set<pid_t> before = ThreadsRunningAllChunks(pool);
  ASSERT_EQ(before.size(), 3u);
  pool.ParallelFor(2, 1, [](int64_t, int64_t) {});  // fewer chunks than threads
  EXPECT_EQ(ThreadsRunningAllChunks(pool), before);
}

TEST(ThreadPoolTest, ExceptionsPropagate) {
  for (int threads : {1, 4}) {
    const ThreadPool pool(threads);
    std::atomic<int> calls{0};
    EXPECT_THROW(pool.ParallelFor(1000, 10,
                                  [&](int64_t begin, int64_t end) {
                                    calls.fetch_add(1);
                                    if (begin <= 500 && 500 < end) throw std::runtime_error("index 500");
                                  }),
                 std::runtime_error)
        << "threads " << threads;
    EXPECT_GE(calls.load(), 1);
    // The pool stays usable.
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(1000, 10, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
    });
    EXPECT_EQ(sum.load(), 999 * 1000 / 2);
  }
}

// A shared pool's threads serve one loop at a time: a loop started while another holds them runs on its caller's
// thread, as one range; copies of the pool are the same pool.
TEST(ThreadPoolTest, ASharedPoolRunsOneLoopOnItsThreadsAtATime) {
  const ThreadPool pool = ThreadPool::Shared(2);
  const ThreadPool copy = pool;  // what each session holds
  EXPECT_TRUE(pool.shared());
  EXPECT_FALSE(ThreadPool(2).shared());
  std::atomic<bool> holding{false}, release{false};
  std::thread holder([&] {
    pool.ParallelFor(2, 1, [&](int64_t, int64_t) {
      holding = true;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!release && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    });
  });
  while (!holding) std::this_thread::yield();
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::set<std::thread::id> threads;
  copy.ParallelFor(64, 1, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    ranges.emplace_back(begin, end);
    threads.insert(std::this_thread::get_id());
  });
  release = true;
  holder.join();
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0], (std::pair<int64_t, int64_t>{0, 64}));
  EXPECT_EQ(threads, (std::set<std::thread::id>{std::this_thread::get_id()}));
  // Free again: the loop takes the pool's threads (several ranges).
  ranges.clear();
  copy.ParallelFor(64, 1, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    ranges.emplace_back(begin, end);
  });
  EXPECT_GT(ranges.size(), 1u);
}

}  // namespace
}  // namespace tessera
