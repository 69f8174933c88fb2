// StreamAllocator's same-stream reuse cache: blocks freed through a view return to that view's next allocations
// of the same rounded size without the base allocator; copy views (use != release) never cache; limits, Trim,
// an allocation the base refuses, and Detach give cached blocks back.
#include "core/stream_allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "tessera/status.h"
#include "tessera/stream.h"

namespace tessera {
namespace {

constexpr size_t kCache = size_t{64} << 20;

class NullStream : public Stream {
 public:
  void* native_handle() const override { return nullptr; }
  void Synchronize() override {}
  std::unique_ptr<Event> CreateEvent() override { return nullptr; }
  const MemoryInfo& memory_info() const override { return info_; }

 private:
  MemoryInfo info_ = MemoryInfo::Host();
};

// Host memory that logs which calls reach it, with an optional capacity past which it reports out of memory.
class CountingAllocator : public Allocator {
 public:
  void* Allocate(size_t bytes) override { return AllocateOn(bytes, nullptr); }
  void Free(void* p) override { FreeAfter(p, nullptr); }
  void* AllocateOn(size_t bytes, Stream* stream) override {
    if (capacity > 0 && in_use + bytes > capacity) Fail(ErrorCode::kOutOfMemory, "counting allocator is full");
    ++allocations;
    last_use = stream;
    auto block = std::make_unique<char[]>(bytes);
    void* p = block.get();
    blocks[p] = {std::move(block), bytes};
    in_use += bytes;
    return p;
  }
  void FreeAfter(void* p, Stream* stream) override {
    ++frees;
    last_release = stream;
    auto it = blocks.find(p);
    ASSERT_NE(it, blocks.end());
    in_use -= it->second.second;
    blocks.erase(it);
  }
  const MemoryInfo& Info() const override { return info_; }

  int allocations = 0, frees = 0;
  size_t in_use = 0, capacity = 0;
  Stream* last_use = nullptr;
  Stream* last_release = nullptr;
  std::map<void*, std::pair<std::unique_ptr<char[]>, size_t>> blocks;

 private:
  MemoryInfo info_ = MemoryInfo::Host();
};

TEST(StreamAllocatorTest, ReusesAFreedBlockOfTheSameSizeOnItsStreamWithoutTheBase) {
  auto base = std::make_shared<CountingAllocator>();
  NullStream stream;
  StreamAllocator view(base, &stream, &stream, kCache);
  void* a = view.Allocate(1000);
  EXPECT_EQ(base->last_use, &stream);
  view.Free(a);
  EXPECT_EQ(base->frees, 0);
  EXPECT_EQ(view.CachedBytes(), 1024u);  // rounded to 256
  EXPECT_EQ(view.Allocate(1024), a);       // same rounded size: the cached block
  EXPECT_EQ(base->allocations, 1);
  EXPECT_EQ(view.CachedBytes(), 0u);
  void* b = view.Allocate(2000);  // another size: from the base
  EXPECT_NE(b, a);
  EXPECT_EQ(base->allocations, 2);
  view.Free(a);
  view.Free(b);
  EXPECT_EQ(view.Trim(), 1024u + 2048u);
  EXPECT_EQ(base->frees, 2);
  EXPECT_EQ(base->last_release, &stream);
  EXPECT_EQ(base->in_use, 0u);
}

TEST(StreamAllocatorTest, CopyViewsAndLargeBlocksGoStraightToTheBase) {
  auto base = std::make_shared<CountingAllocator>();
  NullStream copy, compute;
  StreamAllocator copy_view(base, &copy, &compute, kCache);
  copy_view.Free(copy_view.Allocate(64));
  EXPECT_EQ(base->frees, 1);
  EXPECT_EQ(base->last_release, &compute);
  StreamAllocator view(base, &compute, &compute, kCache);
  view.Free(view.Allocate(StreamAllocator::kMaxCachedBlockBytes + 1));
  EXPECT_EQ(base->frees, 2);
  EXPECT_EQ(view.CachedBytes(), 0u);
}

TEST(StreamAllocatorTest, TheCacheStopsAtItsLimit) {
  auto base = std::make_shared<CountingAllocator>();
  NullStream stream;
  StreamAllocator view(base, &stream, &stream, kCache);
  std::vector<void*> blocks;
  const size_t block = StreamAllocator::kMaxCachedBlockBytes;
  const size_t fit = kCache / block;
  for (size_t i = 0; i < fit + 2; ++i) blocks.push_back(view.Allocate(block));
  for (void* p : blocks) view.Free(p);
  EXPECT_EQ(view.CachedBytes(), fit * block);
  EXPECT_EQ(base->frees, 2);
  view.Trim();
  EXPECT_EQ(base->in_use, 0u);
}

TEST(StreamAllocatorTest, AnAllocationTheBaseRefusesGivesTheCacheBackAndRetries) {
  auto base = std::make_shared<CountingAllocator>();
  base->capacity = 4096;
  NullStream stream;
  StreamAllocator view(base, &stream, &stream, kCache);
  view.Free(view.Allocate(3000));  // 3072 cached, still counted by the base
  void* p = view.Allocate(2048);   // the base is full until the cache is trimmed
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(view.CachedBytes(), 0u);
  EXPECT_EQ(base->in_use, 2048u);
  // With nothing cached, the base's error reaches the caller.
  EXPECT_THROW(view.Allocate(4096), Error);
  view.Free(p);
}

TEST(StreamAllocatorTest, AViewWithoutACacheGoesStraightToTheBase) {
  auto base = std::make_shared<CountingAllocator>();
  NullStream stream;
  StreamAllocator view(base, &stream, &stream, 0);
  view.Free(view.Allocate(256));
  EXPECT_EQ(base->frees, 1);
  EXPECT_EQ(view.CachedBytes(), 0u);
}

TEST(StreamAllocatorTest, DetachGivesTheCacheBackAndLaterFreesBypassIt) {
  auto base = std::make_shared<CountingAllocator>();
  NullStream stream;
  StreamAllocator view(base, &stream, &stream, kCache);
  void* kept = view.Allocate(512);  // freed after Detach, e.g. an output the caller still holds
  view.Free(view.Allocate(256));
  view.Detach();
  EXPECT_EQ(view.CachedBytes(), 0u);
  EXPECT_EQ(base->last_release, nullptr);
  view.Free(kept);
  EXPECT_EQ(base->in_use, 0u);
  EXPECT_EQ(base->last_release, nullptr);
  view.Free(view.Allocate(256));
  EXPECT_EQ(view.CachedBytes(), 0u);
}

}  // namespace
}  // namespace tessera
