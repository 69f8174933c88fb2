#include "tessera/arena.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/logging.h"
#include "tessera/status.h"
#include "tessera/stream.h"

namespace tessera {

namespace {

constexpr size_t kMinAlignment = 256;
// Bin i holds free chunks of [256 << i, 256 << (i + 1)) bytes; the last bin holds everything larger.
constexpr size_t kNumBins = 24;

struct Region;

// The event of a fence, and whether it is known to have been reached. Fences are copied to every piece of a split
// chunk and merged into its neighbours, so one event can guard many chunks for a long time after its stream has
// passed it (e.g. blocks last used by a concurrent run that ended long ago): once an allocation finds it reached,
// no later one waits for it, and merges drop it.
struct FenceEvent {
  explicit FenceEvent(std::unique_ptr<Event> e) : event(std::move(e)) {}
  std::unique_ptr<Event> event;
  std::atomic<bool> reached{false};

  bool Reached() {
    if (reached.load(std::memory_order_relaxed)) return true;
    if (!event->Query()) return false;
    reached.store(true, std::memory_order_relaxed);
    return true;
  }
};

// A point on a stream after which a freed chunk's memory is no longer used (stream_fences).
struct Fence {
  const Stream* stream = nullptr;  // compared, never dereferenced
  std::shared_ptr<FenceEvent> event;
  uint64_t sequence = 0;           // arena-wide recording order: a later fence of a stream covers earlier ones
};

// Adds `from` to `into`, keeping one fence per stream: the latest. Fences known to be reached are dropped.
void MergeFences(std::vector<Fence>& into, const std::vector<Fence>& from) {
  std::erase_if(into, [](const Fence& f) { return f.event->reached.load(std::memory_order_relaxed); });
  for (const Fence& f : from) {
    if (f.event->reached.load(std::memory_order_relaxed)) continue;
    auto same = std::find_if(into.begin(), into.end(), [&](const Fence& g) { return g.stream == f.stream; });
    if (same == into.end())
      into.push_back(f);
    else if (same->sequence < f.sequence)
      *same = f;
  }
}

// Host wait for every fence; errors are logged, not thrown (this runs where memory is given back for good).
void SynchronizeQuietly(const std::vector<Fence>& fences) {
  for (const Fence& f : fences) {
    try {
      f.event->event->Synchronize();
    } catch (const std::exception& e) {
      Log(LogLevel::kWarning, "arena: waiting for a freed block's last use failed: ", e.what());
    }
  }
}

// A contiguous piece of a region, either handed out or free. Chunks of one region form a doubly
// linked list in address order, so merging on free only has to look at the two neighbours.
struct Chunk {
  char* ptr = nullptr;
  size_t size = 0;
  bool in_use = false;
  Chunk* prev = nullptr;
  Chunk* next = nullptr;
  Region* region = nullptr;
  std::vector<Fence> fences;  // free chunks: where their memory's last uses end
};

struct Region {
  char* base = nullptr;
  size_t size = 0;
  Chunk* first = nullptr;
};

// Best fit: smallest size first, lowest address among equals (keeps reuse deterministic).
struct BySizeThenAddress {
  bool operator()(const Chunk* a, const Chunk* b) const {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
};

size_t RoundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

size_t BinIndex(size_t bytes) {
  const size_t units = std::max<size_t>(bytes / kMinAlignment, 1);
  return std::min<size_t>(std::bit_width(units) - 1, kNumBins - 1);
}

}  // namespace

struct Arena::Impl {
  AllocatorPtr underlying;
  ArenaOptions options;
  // Chunk sizes are multiples of this; chunk addresses are region base + such multiples, so they keep
  // the underlying allocator's alignment.
  size_t alignment;

  mutable std::mutex mutex;
  std::vector<std::unique_ptr<Region>> regions;
  using Bin = std::set<Chunk*, BySizeThenAddress>;
  using InUse = std::unordered_map<void*, Chunk*>;
  std::array<Bin, kNumBins> bins;
  InUse in_use;
  // Recycled container nodes and chunk objects: a step's allocation and free move chunks between the bins and
  // in_use and split and merge them, which would otherwise cost several heap allocations each (node handles keep
  // their memory between extract and insert).
  static constexpr size_t kMaxSpares = 64;
  std::vector<Bin::node_type> spare_bin_nodes;
  std::vector<InUse::node_type> spare_in_use_nodes;
  std::vector<Chunk*> spare_chunks;
  size_t last_region_bytes = 0;
  AllocatorStats stats;
  // Fences of one stream are numbered in the order their events are recorded on it: threads that free blocks
  // at the same time (a run's thread, a stream's completion callback) take the arena's lock in either order, and
  // a merge that kept the fence it was told was later could keep the earlier point and let a block be reused
  // while the later use still runs.
  std::atomic<uint64_t> fence_sequence{0};
  // Per stream: the lock that makes recording an event and numbering its fence one step, and the events of fences
  // no chunk needs any more, recorded again for later fences (creating a device event costs about as much as
  // recording it). Fences drop their events with or without `mutex` held; never with a StreamFences lock held.
  struct StreamFences {
    std::mutex mutex;
    std::vector<std::unique_ptr<Event>> spare;
  };
  std::mutex streams_mutex;
  std::unordered_map<const Stream*, std::unique_ptr<StreamFences>> fences_by_stream;

  Impl(AllocatorPtr under, ArenaOptions opts)
      : underlying(std::move(under)),
        options(opts),
        alignment(std::max(kMinAlignment, underlying->Info().alignment)) {}

  ~Impl() {
    for (auto& region : regions) ReleaseRegion(*region);
    for (Chunk* c : spare_chunks) delete c;
  }

  void InsertFree(Chunk* c) {
    Bin& bin = bins[BinIndex(c->size)];
    if (spare_bin_nodes.empty()) {
      bin.insert(c);
      return;
    }
    Bin::node_type node = std::move(spare_bin_nodes.back());
    spare_bin_nodes.pop_back();
    node.value() = c;
    bin.insert(std::move(node));
  }
  void EraseFree(Chunk* c) {
    Bin::node_type node = bins[BinIndex(c->size)].extract(c);
    if (!node.empty() && spare_bin_nodes.size() < kMaxSpares) spare_bin_nodes.push_back(std::move(node));
  }

  void AddInUse(Chunk* c) {
    if (spare_in_use_nodes.empty()) {
      in_use.emplace(c->ptr, c);
      return;
    }
    InUse::node_type node = std::move(spare_in_use_nodes.back());
    spare_in_use_nodes.pop_back();
    node.key() = c->ptr;
    node.mapped() = c;
    in_use.insert(std::move(node));
  }
  // The in-use chunk at `p` (nullptr when `p` is not one), no longer listed as in use.
  Chunk* RemoveInUse(void* p) {
    auto it = in_use.find(p);
    if (it == in_use.end()) return nullptr;
    Chunk* c = it->second;
    InUse::node_type node = in_use.extract(it);
    if (spare_in_use_nodes.size() < kMaxSpares) spare_in_use_nodes.push_back(std::move(node));
    return c;
  }

  Chunk* NewChunk(char* ptr, size_t size, Chunk* prev, Chunk* next, Region* region, const std::vector<Fence>& fences) {
    Chunk* c;
    if (spare_chunks.empty()) {
      c = new Chunk;
    } else {
      c = spare_chunks.back();
      spare_chunks.pop_back();
    }
    c->ptr = ptr;
    c->size = size;
    c->in_use = false;
    c->prev = prev;
    c->next = next;
    c->region = region;
    c->fences = fences;
    return c;
  }
  void DeleteChunk(Chunk* c) {
    if (spare_chunks.size() >= kMaxSpares) {
      delete c;
      return;
    }
    c->fences.clear();
    spare_chunks.push_back(c);
  }

  Chunk* FindFreeChunk(size_t rounded) {
    for (size_t b = BinIndex(rounded); b < kNumBins; ++b) {
      Chunk probe;
      probe.size = rounded;
      auto it = bins[b].lower_bound(&probe);
      if (it != bins[b].end()) return *it;
    }
    return nullptr;
  }

  // Splits off the tail of `c` as a new free chunk when the leftover is worth keeping separately:
  // when it is at least as large as the request, or when leaving it attached would waste more than
  // max_dead_bytes_per_chunk.
  void MaybeSplit(Chunk* c, size_t rounded) {
    const size_t leftover = c->size - rounded;
    if (leftover < alignment) return;
    if (c->size < 2 * rounded && leftover < options.max_dead_bytes_per_chunk) return;
    Chunk* tail = NewChunk(c->ptr + rounded, leftover, c, c->next, c->region, c->fences);
    if (c->next != nullptr) c->next->prev = tail;
    c->next = tail;
    c->size = rounded;
    InsertFree(tail);
  }

  // Hands out `c`; its fences move to `fences` (the new user must wait for them).
  void* TakeChunk(Chunk* c, size_t rounded, std::vector<Fence>& fences) {
    EraseFree(c);
    MaybeSplit(c, rounded);
    fences = std::move(c->fences);
    c->fences.clear();
    c->in_use = true;
    AddInUse(c);
    stats.bytes_in_use += c->size;
    stats.peak_bytes_in_use = std::max(stats.peak_bytes_in_use, stats.bytes_in_use);
    ++stats.num_allocs;
    return c->ptr;
  }

  // The size of the next region to reserve for a request of `rounded` bytes (before the limit).
  size_t NextRegionBytes(size_t rounded) const {
    if (options.extend_strategy == ArenaExtendStrategy::kSameAsRequested) return rounded;
    const size_t doubled = last_region_bytes == 0 ? options.initial_chunk_bytes : 2 * last_region_bytes;
    return RoundUp(std::max(doubled, rounded), alignment);
  }

  bool WithinLimit(size_t bytes) const {
    return options.max_bytes == 0 || stats.bytes_reserved + bytes <= options.max_bytes;
  }

  // Reserves a region that can hold `rounded` bytes; returns false when the limit or the underlying
  // allocator refuses. A preferred size larger than the request falls back to the request itself.
  bool TryExtend(size_t rounded) {
    if (!WithinLimit(rounded)) return false;
    size_t bytes = NextRegionBytes(rounded);
    if (!WithinLimit(bytes)) bytes = rounded;
    char* base = TryReserve(bytes);
    if (base == nullptr && bytes != rounded) base = TryReserve(bytes = rounded);
    if (base == nullptr) return false;
    auto region = std::make_unique<Region>(Region{base, bytes, nullptr});
    region->first = new Chunk{base, bytes, false, nullptr, nullptr, region.get(), {}};
    InsertFree(region->first);
    regions.push_back(std::move(region));
    last_region_bytes = bytes;
    stats.bytes_reserved += bytes;
    ++stats.num_reserves;
    return true;
  }

  char* TryReserve(size_t bytes) {
    try {
      return static_cast<char*>(underlying->Allocate(bytes));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kOutOfMemory) throw;
      return nullptr;
    }
  }

  void ReleaseRegion(Region& region) {
    for (Chunk* c = region.first; c != nullptr;) {
      Chunk* next = c->next;
      SynchronizeQuietly(c->fences);
      delete c;
      c = next;
    }
    underlying->Free(region.base);
  }

  size_t ShrinkLocked() {
    size_t freed = 0;
    std::erase_if(regions, [&](const std::unique_ptr<Region>& region) {
      Chunk* only = region->first;
      if (only->in_use || only->next != nullptr) return false;
      EraseFree(only);
      freed += region->size;
      ReleaseRegion(*region);
      return true;
    });
    stats.bytes_reserved -= freed;
    return freed;
  }

  [[noreturn]] void FailOutOfMemory(size_t requested) const {
    Fail(ErrorCode::kOutOfMemory, "arena for ", underlying->Info().ToString(), ": cannot allocate ", requested,
         " bytes (", stats.bytes_in_use, " bytes in use, ", stats.bytes_reserved, " reserved, limit ",
         options.max_bytes, " bytes)");
  }

  StreamFences& FencesOf(const Stream& stream) {
    std::lock_guard<std::mutex> lock(streams_mutex);
    std::unique_ptr<StreamFences>& state = fences_by_stream[&stream];
    if (state == nullptr) state = std::make_unique<StreamFences>();
    return *state;
  }

  // A fence at the end of the work queued on `stream` so far; its event goes back to the stream's spares once no
  // fence holds it.
  Fence RecordFence(Stream& stream) {
    StreamFences& state = FencesOf(stream);
    std::unique_ptr<Event> event;
    uint64_t sequence = 0;
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      if (!state.spare.empty()) {
        event = std::move(state.spare.back());
        state.spare.pop_back();
      } else {
        event = stream.CreateEvent();
      }
      event->Record(stream);
      sequence = ++fence_sequence;
    }
    auto fence_event = std::shared_ptr<FenceEvent>(new FenceEvent(std::move(event)), [&state](FenceEvent* done) {
      {
        std::lock_guard<std::mutex> lock(state.mutex);
        state.spare.push_back(std::move(done->event));
      }
      delete done;
    });
    return Fence{&stream, std::move(fence_event), sequence};
  }

  void* AllocateLocked(size_t bytes, std::vector<Fence>& fences) {
    const size_t rounded = RoundUp(std::max<size_t>(bytes, 1), alignment);
    if (Chunk* c = FindFreeChunk(rounded)) return TakeChunk(c, rounded, fences);
    if (!TryExtend(rounded)) {
      ShrinkLocked();
      if (!TryExtend(rounded)) FailOutOfMemory(bytes);
    }
    return TakeChunk(FindFreeChunk(rounded), rounded, fences);
  }

  // Merges `c` (now free, last used up to `fences`) with its free neighbours and files the result in a bin.
  void Release(Chunk* c, std::vector<Fence> fences) {
    c->in_use = false;
    c->fences = std::move(fences);
    stats.bytes_in_use -= c->size;
    if (c->next != nullptr && !c->next->in_use) {
      Chunk* next = c->next;
      MergeFences(c->fences, next->fences);
      EraseFree(next);
      c->size += next->size;
      c->next = next->next;
      if (c->next != nullptr) c->next->prev = c;
      DeleteChunk(next);
    }
    if (c->prev != nullptr && !c->prev->in_use) {
      Chunk* prev = c->prev;
      MergeFences(prev->fences, c->fences);
      EraseFree(prev);
      prev->size += c->size;
      prev->next = c->next;
      if (prev->next != nullptr) prev->next->prev = prev;
      DeleteChunk(c);
      c = prev;
    }
    InsertFree(c);
  }
};

Arena::Arena(AllocatorPtr underlying, ArenaOptions options)
    : impl_(std::make_unique<Impl>(std::move(underlying), options)) {}

Arena::~Arena() = default;

void* Arena::Allocate(size_t bytes) { return AllocateOn(bytes, nullptr); }

void* Arena::AllocateOn(size_t bytes, Stream* stream) {
  std::vector<Fence> fences;
  void* p;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    p = impl_->AllocateLocked(bytes, fences);
  }
  // Outside the lock: a host wait must not hold up other threads' allocations.
  try {
    size_t waits = 0, foreign = 0;
    for (const Fence& f : fences) {
      if (stream != nullptr && f.stream == stream) continue;  // already in that stream's order
      ++foreign;
      if (f.event->Reached()) continue;                       // its stream is past it: nothing to wait for
      if (stream == nullptr)
        f.event->event->Synchronize();
      else
        f.event->event->Wait(*stream);
      ++waits;
    }
    if (foreign > 0) {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      impl_->stats.num_stream_waits += waits;
      impl_->stats.num_foreign_fences += foreign;
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->Release(impl_->RemoveInUse(p), std::move(fences));
    throw;
  }
  return p;
}

void Arena::Free(void* p) { FreeAfter(p, nullptr); }

void Arena::FreeAfter(void* p, Stream* stream) {
  if (p == nullptr) return;
  std::vector<Fence> fences;
  if (impl_->options.stream_fences && stream != nullptr) {
    // Free runs from tensor destructors, so it must not throw: without an event, wait for the stream instead.
    try {
      fences.push_back(impl_->RecordFence(*stream));
    } catch (const std::exception& e) {
      Log(LogLevel::kWarning, "arena for ", Info().ToString(), ": no event for a freed block (", e.what(),
          "); waiting for its stream instead");
      try {
        stream->Synchronize();
      } catch (const std::exception& again) {
        Log(LogLevel::kWarning, "arena for ", Info().ToString(), ": the stream failed too (", again.what(), ")");
      }
    }
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Chunk* c = impl_->RemoveInUse(p);
  if (c == nullptr)
    Fail(ErrorCode::kInvalidArgument, "arena for ", Info().ToString(), ": Free of a pointer it did not allocate");
  impl_->Release(c, std::move(fences));
}

const MemoryInfo& Arena::Info() const { return impl_->underlying->Info(); }

AllocatorStats Arena::Stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

size_t Arena::Shrink() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->ShrinkLocked();
}

const ArenaOptions& Arena::options() const { return impl_->options; }

}  // namespace tessera
