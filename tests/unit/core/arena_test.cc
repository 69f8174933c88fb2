#include "tessera/arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tessera/status.h"

namespace tessera {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

ArenaOptions Options(ArenaExtendStrategy strategy, size_t initial = kMiB, size_t max_bytes = 0) {
  ArenaOptions o;
  o.extend_strategy = strategy;
  o.initial_chunk_bytes = initial;
  o.max_bytes = max_bytes;
  return o;
}

// An underlying allocator with a large alignment, to check that the arena honours it.
class WideAlignmentAllocator : public Allocator {
 public:
  WideAlignmentAllocator() {
    info_ = MemoryInfo::Host();
    info_.alignment = 1024;
  }
  void* Allocate(size_t bytes) override { return std::aligned_alloc(1024, (bytes + 1023) / 1024 * 1024); }
  void Free(void* p) override { std::free(p); }
  const MemoryInfo& Info() const override { return info_; }

 private:
  MemoryInfo info_;
};

uintptr_t Address(void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(ArenaTest, SplitsARegionAndReusesFreedChunks) {
  auto host = CreateHostAllocator();
  Arena arena(host, Options(ArenaExtendStrategy::kNextPowerOfTwo));
  void* a = arena.Allocate(1000);
  void* b = arena.Allocate(1000);
  EXPECT_EQ(Address(b), Address(a) + 1024) << "the second chunk is split off right after the first";
  EXPECT_EQ(Address(a) % host->Info().alignment, 0u) << "region bases keep the underlying alignment";
  AllocatorStats stats = arena.Stats();
  EXPECT_EQ(stats.num_reserves, 1u);
  EXPECT_EQ(stats.bytes_reserved, kMiB);
  EXPECT_EQ(stats.bytes_in_use, 2048u);
  EXPECT_EQ(stats.num_allocs, 2u);

  arena.Free(a);
  EXPECT_EQ(arena.Allocate(700), a) << "a freed chunk of the right size is reused";
  arena.Free(a);
  arena.Free(b);
  EXPECT_EQ(arena.Stats().bytes_in_use, 0u);
  // Only a fully merged region can hold a request of its whole size without reserving again.
  EXPECT_EQ(arena.Allocate(kMiB), a);
  EXPECT_EQ(arena.Stats().num_reserves, 1u);
  EXPECT_EQ(arena.Stats().peak_bytes_in_use, kMiB);
}

TEST(ArenaTest, MergesWithBothNeighbours) {
  Arena arena(CreateHostAllocator(), Options(ArenaExtendStrategy::kNextPowerOfTwo));
  void* a = arena.Allocate(256);
  void* b = arena.Allocate(256);
  void* c = arena.Allocate(256);
  void* guard = arena.Allocate(256);
  arena.Free(a);
  arena.Free(c);
  arena.Free(b);  // merges with a (before) and c (after) into one 768-byte chunk
  EXPECT_EQ(arena.Allocate(768), a);
  arena.Free(guard);
}

TEST(ArenaTest, NextPowerOfTwoDoublesTheRegionSize) {
  Arena arena(CreateHostAllocator(), Options(ArenaExtendStrategy::kNextPowerOfTwo, kMiB));
  arena.Allocate(768 * kKiB);  // fills the first 1 MiB region
  EXPECT_EQ(arena.Stats().bytes_reserved, kMiB);
  arena.Allocate(768 * kKiB);  // needs a second region: 2 MiB
  EXPECT_EQ(arena.Stats().num_reserves, 2u);
  EXPECT_EQ(arena.Stats().bytes_reserved, 3 * kMiB);
  arena.Allocate(3 * kMiB);  // the 1.25 MiB left in region 2 is too small: 4 MiB
  EXPECT_EQ(arena.Stats().num_reserves, 3u);
  EXPECT_EQ(arena.Stats().bytes_reserved, 7 * kMiB);
  arena.Allocate(20 * kMiB);  // larger than doubling: exactly the request
  EXPECT_EQ(arena.Stats().bytes_reserved, 27 * kMiB);
}

TEST(ArenaTest, SameAsRequestedReservesTheRoundedRequest) {
  Arena arena(CreateHostAllocator(), Options(ArenaExtendStrategy::kSameAsRequested));
  arena.Allocate(1000);
  EXPECT_EQ(arena.Stats().bytes_reserved, 1024u);
  arena.Allocate(5000);
  EXPECT_EQ(arena.Stats().bytes_reserved, 1024u + 5120u);
  EXPECT_EQ(arena.Stats().num_reserves, 2u);
}

TEST(ArenaTest, AlignmentIsTheLargerOfTheUnderlyingAndTwoHundredFiftySix) {
  Arena arena(std::make_shared<WideAlignmentAllocator>(), Options(ArenaExtendStrategy::kNextPowerOfTwo));
  void* a = arena.Allocate(1);
  void* b = arena.Allocate(1);
  EXPECT_EQ(Address(b) - Address(a), 1024u);
  EXPECT_EQ(arena.Stats().bytes_in_use, 2048u);
}

TEST(ArenaTest, ZeroByteAllocationsAreUnique) {
  Arena arena(CreateHostAllocator(), Options(ArenaExtendStrategy::kNextPowerOfTwo));
  void* a = arena.Allocate(0);
  void* b = arena.Allocate(0);
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a, b);
  arena.Free(a);
  arena.Free(b);
}

TEST(ArenaTest, LimitThrowsOutOfMemoryAndTheArenaStaysUsable) {
  Arena arena(CreateHostAllocator(), Options(ArenaExtendStrategy::kNextPowerOfTwo, kMiB, 4 * kMiB));
  void* big = arena.Allocate(3 * kMiB);
  try {
    arena.Allocate(2 * kMiB);
    FAIL() << "expected kOutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    const std::string message = e.what();
    EXPECT_NE(message.find(MemoryInfo::Host().ToString()), std::string::npos) << message;
    EXPECT_NE(message.find("2097152"), std::string::npos) << message;  // requested
    EXPECT_NE(message.find("3145728"), std::string::npos) << message;  // in use
    EXPECT_NE(message.find("4194304"), std::string::npos) << message;  // limit
  }
  void* small = arena.Allocate(512 * kKiB);  // still fits under the limit
  arena.Free(small);
  arena.Free(big);
  // 4 MiB fits only after the free 3 MiB region is returned: the arena shrinks and retries.
  void* whole = arena.Allocate(4 * kMiB);
  EXPECT_NE(whole, nullptr);
  EXPECT_EQ(arena.Stats().bytes_reserved, 4 * kMiB);
}

TEST(ArenaTest, ShrinkReturnsFullyFreeRegions) {
  auto host = CreateHostAllocator();
  Arena arena(host, Options(ArenaExtendStrategy::kSameAsRequested));
  void* a = arena.Allocate(64 * kKiB);
  void* b = arena.Allocate(128 * kKiB);
  EXPECT_EQ(host->Stats().bytes_in_use, 192 * kKiB);
  arena.Free(b);
  EXPECT_EQ(arena.Shrink(), 128 * kKiB);
  EXPECT_EQ(arena.Stats().bytes_reserved, 64 * kKiB);
  EXPECT_EQ(host->Stats().bytes_in_use, 64 * kKiB);
  EXPECT_EQ(arena.Shrink(), 0u) << "a region with a chunk in use stays";
  arena.Free(a);
  EXPECT_EQ(arena.Shrink(), 64 * kKiB);
  EXPECT_EQ(host->Stats().bytes_in_use, 0u);
}

TEST(ArenaTest, FreeOfAnUnknownPointerThrows) {
  Arena arena(CreateHostAllocator(), Options(ArenaExtendStrategy::kNextPowerOfTwo));
  int not_from_the_arena = 0;
  try {
    arena.Free(&not_from_the_arena);
    FAIL() << "expected kInvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  void* p = arena.Allocate(10);
  arena.Free(p);
  EXPECT_THROW(arena.Free(p), Error) << "double free";
}

TEST(ArenaTest, DestructorReturnsEveryRegion) {
  auto host = CreateHostAllocator();
  {
    Arena arena(host, Options(ArenaExtendStrategy::kSameAsRequested));
    arena.Allocate(1000);
    arena.Allocate(kMiB);
    EXPECT_GT(host->Stats().bytes_in_use, 0u);
  }
  EXPECT_EQ(host->Stats().bytes_in_use, 0u);
}

struct Block {
  uint8_t* p;
  size_t size;
  uint8_t pattern;
};

void Fill(const Block& b) { std::memset(b.p, b.pattern, b.size); }

bool Intact(const Block& b) {
  for (size_t i = 0; i < b.size; ++i)
    if (b.p[i] != b.pattern) return false;
  return true;
}

// Random allocations and frees; every block is filled with its own byte and checked before it is
// freed, so any overlap between live chunks shows up as a corrupted block.
void RandomWorkload(Arena& arena, uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  std::vector<Block> live;
  for (int step = 0; step < steps; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const size_t size = 1 + rng() % (rng() % 8 == 0 ? 256 * kKiB : 4 * kKiB);
      Block b{static_cast<uint8_t*>(arena.Allocate(size)), size, static_cast<uint8_t>(1 + rng() % 255)};
      ASSERT_EQ(Address(b.p) % arena.Info().alignment, 0u);
      Fill(b);
      live.push_back(b);
    } else {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(Intact(live[i])) << "block of " << live[i].size << " bytes was overwritten";
      arena.Free(live[i].p);
      live[i] = live.back();
      live.pop_back();
    }
  }
  for (const Block& b : live) {
    ASSERT_TRUE(Intact(b));
    arena.Free(b.p);
  }
}

TEST(ArenaTest, RandomAllocationsNeverOverlap) {
  Arena arena(CreateHostAllocator(), Options(ArenaExtendStrategy::kNextPowerOfTwo, 64 * kKiB));
  RandomWorkload(arena, 42, 4000);
  EXPECT_EQ(arena.Stats().bytes_in_use, 0u);
  arena.Shrink();
  EXPECT_EQ(arena.Stats().bytes_reserved, 0u) << "all chunks merged back into whole regions";
}

TEST(ArenaTest, ConcurrentAllocationsFromEightThreads) {
  Arena arena(CreateHostAllocator(), Options(ArenaExtendStrategy::kNextPowerOfTwo, 256 * kKiB));
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 8; ++t) threads.emplace_back([&arena, t] { RandomWorkload(arena, 1000 + t, 1500); });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(arena.Stats().bytes_in_use, 0u);
  arena.Shrink();
  EXPECT_EQ(arena.Stats().bytes_reserved, 0u);
}

}  // namespace
}  // namespace tessera
