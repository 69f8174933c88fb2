// StreamPool: a session's device streams, in sets, so that runs from several threads run in parallel on the
// device.
//
// A stream set holds, for each device memory of the session's EPs with streams, a compute stream and, when the
// EP has them, a copy stream per direction (host -> device, device -> host), with the allocator views ordered on
// them (StreamAllocator) and the PlanServices that name them. Set 0, the primary, exists from creation: plans are
// built against it. A run takes a set for its duration (Acquire):
//   - an idle set when there is one (the primary first, so a single-threaded caller always runs on it);
//   - else a new set, while there are fewer than `max_sets`;
//   - else the set with the fewest runs, shared: runs sharing a set queue their work on the same streams, in
//     the order their threads reach them, as every run did before sets existed.
// A run on a set other than the primary maps its plan's streams and views to the set's (RunStreams).
//
// Sets are never destroyed before the session: a set given back may still have work in flight (runs that do
// not synchronize), which the next run on it is queued after. Memory freed by one set and reused by another is
// ordered by the arena's stream fences, which every EP that allows several sets must have (kEpRunStreams).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/stream_allocator.h"
#include "exec/plan_builder.h"
#include "exec/run_streams.h"

namespace tessera {

// RunOptions::stream for one run: the set's streams wait for the caller's stream when the join is made; the
// caller's stream waits for the set's streams at Done() (the run has queued all of its work) or, when the run fails
// part way, at destruction, so that the caller's later work never overlaps what the run did queue.
class CallerStreamJoin;

class StreamPool {
 public:
  struct Set {
    std::map<MemoryInfo, std::unique_ptr<Stream>> compute;   // per device memory
    std::map<MemoryInfo, std::unique_ptr<Stream>> copy_in;   // host -> device copies, when the EP has them
    std::map<MemoryInfo, std::unique_ptr<Stream>> copy_out;  // device -> host copies
    PlanServices services;  // stream_for / copy_stream_for / allocator_on name this set's streams
    RunStreams remap;       // the primary's streams and views -> this set's (empty for the primary)
    int runs = 0;           // runs holding the set now

    bool primary() const { return remap.streams.empty(); }
    // nullptr when this set is the primary (the plan's own streams).
    const RunStreams* streams() const { return primary() ? nullptr : &remap; }
    // Every stream of the set.
    std::vector<Stream*> all() const;
    void Synchronize() const;
    // RunOptions::stream: the set's streams wait for the work queued on `caller` so far (before a run queues any)...
    void WaitFor(Stream& caller) const;
    // ...and `caller` waits for the work queued on the set's streams so far (after the run queued all of its work).
    // On the device for streams of the caller's device type and vendor, by host waits for the others.
    void SignalTo(Stream& caller) const;
  };

  // A set held by one run; gives it back when destroyed.
  class Lease {
   public:
    Lease(StreamPool& pool, Set& set) : pool_(&pool), set_(&set) {}
    Lease(Lease&& other) noexcept : pool_(other.pool_), set_(other.set_) { other.pool_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    Set& set() const { return *set_; }

   private:
    StreamPool* pool_;
    Set* set_;
  };

  // Creates the primary set: streams for every device memory of `eps` whose EP has one (the first EP of each
  // memory), copy streams where that EP has them. `base` supplies find_transfer, allocator_for and
  // compile_subgraph; the pool fills in the stream-related services. The pool must not move afterwards.
  void Initialize(const std::vector<ExecutionProvider*>& eps, const PlanServices& base);
  // How many sets runs may spread over (>= 1; 1 keeps every run on the primary set).
  void set_max_sets(size_t max_sets) { max_sets_ = max_sets < 1 ? 1 : max_sets; }
  // Bytes each compute stream's allocator view keeps for same-stream reuse (StreamAllocator); before Initialize.
  void set_cache_bytes(size_t bytes) { cache_bytes_ = bytes; }
  size_t max_sets() const { return max_sets_; }

  Set& primary() { return *sets_.front(); }
  const Set& primary() const { return *sets_.front(); }
  bool has_streams() const { return !sets_.front()->compute.empty(); }

  Lease Acquire();
  // Waits for every stream of every set.
  void Synchronize() const;
  // Number of sets created so far (the primary included).
  size_t size() const;
  // At the session's end, after Synchronize: views stop naming the streams, which are about to be destroyed,
  // so that tensors outliving the session free their memory plainly.
  void Detach();
  // Gives every same-stream cache's blocks back to the allocators; returns their bytes.
  size_t TrimCaches();

 private:
  std::unique_ptr<Set> NewSet();
  void FillServices(Set& set);
  // The view of `info`'s allocator for work on `use` whose reuse `release` orders (memory without a stream:
  // the allocator itself).
  AllocatorPtr View(const MemoryInfo& info, Stream* use, Stream* release);

  struct StreamEp {
    MemoryInfo memory;
    ExecutionProvider* ep;
  };
  std::vector<StreamEp> stream_eps_;
  PlanServices base_;
  size_t max_sets_ = 1;
  size_t cache_bytes_ = 0;
  mutable std::mutex mutex_;  // sets_ (the vector and each set's `runs`)
  std::vector<std::unique_ptr<Set>> sets_;
  std::mutex views_mutex_;
  std::map<std::pair<MemoryInfo, Stream*>, std::shared_ptr<StreamAllocator>> views_;
};

class CallerStreamJoin {
 public:
  CallerStreamJoin(const StreamPool::Set& set, Stream* caller);  // caller nullptr: nothing to join
  ~CallerStreamJoin();
  CallerStreamJoin(const CallerStreamJoin&) = delete;
  CallerStreamJoin& operator=(const CallerStreamJoin&) = delete;
  void Done();

 private:
  const StreamPool::Set& set_;
  Stream* caller_;
};

}  // namespace tessera
