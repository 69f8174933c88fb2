// A best-fit-with-coalescing arena over any Allocator.
//
// Memory is reserved from the underlying allocator in regions; a region is carved into chunks that
// are split on allocation and merged with free neighbours on free. Free chunks sit in size-class bins
// (powers of two from 256 bytes). When no free chunk fits, the arena extends by the next power of two
// of the total reserved so far (kNextPowerOfTwo, never less than the request) or by exactly the rounded
// request (kSameAsRequested). `max_bytes` caps the total reserved; a request over it throws
// kOutOfMemory after first returning free regions to the underlying allocator and retrying.
//
// Stream fences (ArenaOptions::stream_fences, for device memory that work on several streams uses):
// FreeAfter(p, s) records an event on `s` and files it with the freed chunk ("the fence"); merged and
// split chunks keep every fence (the latest per stream). AllocateOn(bytes, s) hands out a chunk after
// making `s` wait, device-side, for the chunk's fences of other streams (a fence of `s` itself is already
// ordered); Allocate(bytes) waits for them on the host. Without stream_fences the streams are ignored,
// which is right when all users of the arena's memory share one stream. Streams are told apart by
// address only, so a stream must not be destroyed while work it queued is pending.
#pragma once

#include <cstddef>

#include "tessera/allocator.h"

namespace tessera {

enum class ArenaExtendStrategy { kNextPowerOfTwo, kSameAsRequested };

struct ArenaOptions {
  ArenaExtendStrategy extend_strategy = ArenaExtendStrategy::kNextPowerOfTwo;
  size_t max_bytes = 0;                   // 0 = no limit
  size_t initial_chunk_bytes = 1 << 20;   // first region size for kNextPowerOfTwo
  size_t max_dead_bytes_per_chunk = 128 << 20;  // never leave more than this unused when not splitting
  bool stream_fences = false;             // order reuse across streams (see above)
};

class Arena : public Allocator {
 public:
  Arena(AllocatorPtr underlying, ArenaOptions options);
  ~Arena() override;
  void* Allocate(size_t bytes) override;
  void Free(void* p) override;
  void* AllocateOn(size_t bytes, Stream* stream) override;
  void FreeAfter(void* p, Stream* stream) override;
  const MemoryInfo& Info() const override;
  AllocatorStats Stats() const override;
  // Returns every region that has no chunk in use to the underlying allocator; returns bytes freed.
  size_t Shrink();
  const ArenaOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
