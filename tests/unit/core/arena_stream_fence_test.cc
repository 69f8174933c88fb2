// Stream fences of the Arena (ArenaOptions::stream_fences), with scripted streams that log what the arena
// asks of them: which events it records at a free, which it waits for at a reuse, and where.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "tessera/arena.h"
#include "tessera/stream.h"

namespace tessera {
namespace {

// "record <event>@<stream>", "wait <event>@<stream>" (device-side), "sync <event>" (host).
using Log = std::vector<std::string>;

// Query (not logged) answers what its stream's `reached` says: whether the device has passed every marker.
class LoggedEvent : public Event {
 public:
  LoggedEvent(Log& log, std::string name, const bool& reached) : log_(log), name_(std::move(name)), reached_(reached) {}
  void Record(Stream& stream) override;
  void Wait(Stream& stream) override;
  void Synchronize() override { log_.push_back("sync " + name_); }
  bool Query() override { return reached_; }

 private:
  Log& log_;
  std::string name_;
  const bool& reached_;
};

class LoggedStream : public Stream {
 public:
  LoggedStream(Log& log, std::string name) : log_(log), name_(std::move(name)) {}
  void* native_handle() const override { return nullptr; }
  void Synchronize() override { log_.push_back("sync stream " + name_); }
  std::unique_ptr<Event> CreateEvent() override {
    return std::make_unique<LoggedEvent>(log_, name_ + std::to_string(++events_), reached);
  }
  const MemoryInfo& memory_info() const override { return info_; }
  const std::string& name() const { return name_; }
  bool reached = false;  // what its events' Query answers

 private:
  Log& log_;
  std::string name_;
  int events_ = 0;
  MemoryInfo info_ = MemoryInfo::Host();
};

void LoggedEvent::Record(Stream& stream) {
  log_.push_back("record " + name_ + "@" + static_cast<LoggedStream&>(stream).name());
}
void LoggedEvent::Wait(Stream& stream) {
  log_.push_back("wait " + name_ + "@" + static_cast<LoggedStream&>(stream).name());
}

class ArenaStreamFenceTest : public ::testing::Test {
 protected:
  Arena MakeArena(bool fences) {
    ArenaOptions options;
    options.stream_fences = fences;
    return Arena(CreateHostAllocator(), options);
  }
  Log log;
  LoggedStream compute{log, "C"};
  LoggedStream copy{log, "X"};
};

TEST_F(ArenaStreamFenceTest, WithoutFencesStreamsAreIgnored) {
  Arena arena = MakeArena(false);
  void* p = arena.AllocateOn(1000, &compute);
  arena.FreeAfter(p, &compute);
  EXPECT_EQ(arena.AllocateOn(1000, &copy), p);
  EXPECT_TRUE(log.empty()) << log.front();
  EXPECT_EQ(arena.Stats().num_stream_waits, 0u);
}

// Blocks freed by runs that have long finished (e.g. a concurrent run's stream set) carry fences whose points the
// device has passed: reusing them on another stream needs no wait, and once one allocation has seen that, the
// fence is dropped from the chunks it was copied to.
TEST_F(ArenaStreamFenceTest, AFenceKnownToBeReachedIsNotWaitedFor) {
  Arena arena = MakeArena(true);
  void* p = arena.AllocateOn(1000, &compute);
  arena.FreeAfter(p, &compute);
  compute.reached = true;
  EXPECT_EQ(arena.AllocateOn(1000, &copy), p);
  EXPECT_EQ(arena.AllocateOn(1000, nullptr), static_cast<char*>(p) + 1024) << "the split-off tail";
  EXPECT_EQ(log, (Log{"record C1@C"}));
  EXPECT_EQ(arena.Stats().num_stream_waits, 0u);
  EXPECT_EQ(arena.Stats().num_foreign_fences, 2u) << "the reused block and the split-off tail each carried it";
}

TEST_F(ArenaStreamFenceTest, ReuseOnTheSameStreamNeedsNoWait) {
  Arena arena = MakeArena(true);
  void* p = arena.AllocateOn(1000, &compute);
  arena.FreeAfter(p, &compute);
  EXPECT_EQ(log, Log({"record C1@C"}));
  EXPECT_EQ(arena.AllocateOn(1000, &compute), p);
  EXPECT_EQ(log, Log({"record C1@C"})) << "the same stream is already ordered after the last use";
  EXPECT_EQ(arena.Stats().num_stream_waits, 0u);
  EXPECT_EQ(arena.Stats().num_foreign_fences, 0u);
}

TEST_F(ArenaStreamFenceTest, ReuseOnAnotherStreamWaitsOnTheDeviceForTheLastUse) {
  Arena arena = MakeArena(true);
  void* p = arena.AllocateOn(1000, &compute);
  void* guard = arena.AllocateOn(1000, &compute);  // keeps p from merging with the free rest of the region
  arena.FreeAfter(p, &compute);
  EXPECT_EQ(arena.AllocateOn(1000, &copy), p);
  EXPECT_EQ(log, Log({"record C1@C", "wait C1@X"}));
  EXPECT_EQ(arena.Stats().num_stream_waits, 1u);
  EXPECT_EQ(arena.Stats().num_foreign_fences, 1u);
  arena.FreeAfter(p, &copy);
  EXPECT_EQ(arena.AllocateOn(1000, &copy), p);
  EXPECT_EQ(log.size(), 3u) << "the fence of C was consumed by the first reuse; X's own fence needs no wait";
  arena.Free(p);
  arena.Free(guard);
}

TEST_F(ArenaStreamFenceTest, EventsOfConsumedFencesAreRecordedAgain) {
  Arena arena = MakeArena(true);
  void* p = arena.AllocateOn(1000, &compute);
  void* guard = arena.AllocateOn(1000, &compute);  // keeps p from merging with the free rest of the region
  for (int i = 0; i < 3; ++i) {
    arena.FreeAfter(p, &compute);
    EXPECT_EQ(arena.AllocateOn(1000, &copy), p);
  }
  EXPECT_EQ(log, Log({"record C1@C", "wait C1@X", "record C1@C", "wait C1@X", "record C1@C", "wait C1@X"}));
  EXPECT_EQ(arena.Stats().num_stream_waits, 3u);
  arena.Free(p);
  arena.Free(guard);
}

TEST_F(ArenaStreamFenceTest, ReuseWithoutAStreamWaitsOnTheHost) {
  Arena arena = MakeArena(true);
  void* p = arena.AllocateOn(1000, &compute);
  void* guard = arena.AllocateOn(1000, &compute);  // keeps p from merging with the free rest of the region
  arena.FreeAfter(p, &compute);
  EXPECT_EQ(arena.Allocate(1000), p);
  EXPECT_EQ(log, Log({"record C1@C", "sync C1"}));
  arena.Free(p);  // no queued use: no fence
  EXPECT_EQ(arena.Allocate(1000), p);
  EXPECT_EQ(log.size(), 2u);
  arena.Free(p);
  arena.Free(guard);
}

TEST_F(ArenaStreamFenceTest, MergedChunksKeepTheLatestFenceOfEveryStream) {
  Arena arena = MakeArena(true);
  void* a = arena.AllocateOn(1024, &compute);
  void* b = arena.AllocateOn(1024, &compute);
  void* c = arena.AllocateOn(1024, &copy);
  void* guard = arena.AllocateOn(1024, &compute);  // keeps the tail of the region out of the merge
  arena.FreeAfter(a, &compute);                    // C1
  arena.FreeAfter(c, &copy);                       // X1
  arena.FreeAfter(b, &compute);                    // C2: a, b and c merge
  log.clear();
  void* whole = arena.Allocate(3 * 1024);
  EXPECT_EQ(whole, a);
  std::sort(log.begin(), log.end());
  EXPECT_EQ(log, Log({"sync C2", "sync X1"})) << "C2 covers C1; the copy stream's fence stays";
  arena.Free(whole);
  arena.Free(guard);
}

TEST_F(ArenaStreamFenceTest, ASplitChunkKeepsItsFencesInBothHalves) {
  Arena arena = MakeArena(true);
  void* big = arena.AllocateOn(4096, &compute);
  void* guard = arena.AllocateOn(1024, &compute);
  arena.FreeAfter(big, &compute);  // C1
  log.clear();
  void* head = arena.AllocateOn(1024, &copy);
  void* tail = arena.AllocateOn(1024, &copy);
  EXPECT_EQ(head, big);
  EXPECT_EQ(static_cast<char*>(tail), static_cast<char*>(big) + 1024);
  EXPECT_EQ(log, Log({"wait C1@X", "wait C1@X"}));
  for (void* p : {head, tail, guard}) arena.Free(p);
}

TEST_F(ArenaStreamFenceTest, ShrinkWaitsForFencesBeforeGivingMemoryBack) {
  Arena arena = MakeArena(true);
  void* p = arena.AllocateOn(1000, &compute);
  arena.FreeAfter(p, &compute);
  EXPECT_GT(arena.Shrink(), 0u);
  EXPECT_EQ(log, Log({"record C1@C", "sync C1"}));
}

// A stream for several threads: every Record takes the next position in the stream's order; waits note the
// position they wait for. `after_first_record` runs inside the first Record, after its position is taken.
class OrderedStream : public Stream {
 public:
  void* native_handle() const override { return nullptr; }
  void Synchronize() override {}
  std::unique_ptr<Event> CreateEvent() override;
  const MemoryInfo& memory_info() const override { return info_; }

  std::atomic<int> position{0};
  std::function<void()> after_first_record;
  std::mutex waits_mutex;
  std::vector<int> waited_for;

 private:
  MemoryInfo info_ = MemoryInfo::Host();
};

class OrderedEvent : public Event {
 public:
  void Record(Stream& stream) override {
    auto& ordered = static_cast<OrderedStream&>(stream);
    position_ = ++ordered.position;
    if (position_ == 1 && ordered.after_first_record) ordered.after_first_record();
  }
  void Wait(Stream& stream) override {
    auto& ordered = static_cast<OrderedStream&>(stream);
    std::lock_guard<std::mutex> lock(ordered.waits_mutex);
    ordered.waited_for.push_back(position_);
  }
  void Synchronize() override {}
  bool Query() override { return false; }

 private:
  int position_ = 0;
};

std::unique_ptr<Event> OrderedStream::CreateEvent() { return std::make_unique<OrderedEvent>(); }

// Two threads free neighbouring blocks last used on one stream at the same time (a run's thread and a stream's
// worker dropping a finished copy's tensors do). Thread A records its fence first, then is held up before it
// reaches the arena's lock; thread B records the later fence meanwhile, if the arena lets it. Whichever order the
// frees then take the arena's lock in, the merged block must wait for the later point of the stream: the earlier
// one may come before B's last use. (With recording and numbering fences apart, B's free took the lock first and
// the merge kept A's earlier fence as "the latest".)
TEST(ArenaConcurrentFenceTest, NeighboursFreedByTwoThreadsAtOnceKeepTheLaterPointOfTheStream) {
  ArenaOptions options;
  options.stream_fences = true;
  Arena arena(CreateHostAllocator(), options);
  OrderedStream compute;
  OrderedStream copy;
  void* p = arena.AllocateOn(1000, &compute);
  void* q = arena.AllocateOn(1000, &compute);
  void* guard = arena.AllocateOn(1000, &compute);  // keeps p and q from merging with the free rest of the region

  std::mutex mutex;
  std::condition_variable changed;
  bool a_recorded = false, b_freed = false;
  compute.after_first_record = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    a_recorded = true;
    changed.notify_all();
    // Gives B time to finish its free; an arena that orders recording stops B until A goes on.
    changed.wait_for(lock, std::chrono::milliseconds(300), [&] { return b_freed; });
  };
  std::thread a([&] { arena.FreeAfter(q, &compute); });
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return a_recorded; });
  }
  arena.FreeAfter(p, &compute);
  {
    std::lock_guard<std::mutex> lock(mutex);
    b_freed = true;
  }
  changed.notify_all();
  a.join();

  EXPECT_EQ(compute.position.load(), 2);
  EXPECT_EQ(arena.AllocateOn(2000, &copy), p) << "p and q merged";
  EXPECT_EQ(copy.waited_for, std::vector<int>{2}) << "the reuse waits for the later of the two points on the stream";
  arena.Free(p);
  arena.Free(guard);
}

}  // namespace
}  // namespace tessera
