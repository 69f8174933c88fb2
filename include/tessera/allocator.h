// Allocators. An Allocator hands out raw memory in one memory space; the Arena (arena.h) adds
// caching on top of any Allocator.
//
// Contract: Allocate(0) returns a non-null unique pointer that Free accepts. A failed Allocate throws
// Error(kOutOfMemory) naming the memory space and the size; it never returns null. Free(p) must be
// called with a pointer from the same allocator. Allocate/Free are thread-safe.
//
// Stream-ordered use: device memory is used by work queued on streams, which may still be pending when
// the host frees it. Allocate(bytes) hands out memory the caller may use at once (on the host or on any
// stream); Free(p) says no queued work uses `p` any more, or only work on the one stream that all users of
// this allocator share. AllocateOn(bytes, stream) hands out memory for work queued on `stream` from now
// on; FreeAfter(p, stream) says every use of `p` is queued on `stream` (or complete). An allocator whose
// memory several streams use (Arena with ArenaOptions::stream_fences) orders a block's reuse after its
// last use; the defaults ignore the stream.
#pragma once

#include <cstddef>
#include <memory>

#include "tessera/device.h"

namespace tessera {

class Stream;

struct AllocatorStats {
  size_t bytes_in_use = 0;
  size_t peak_bytes_in_use = 0;
  size_t bytes_reserved = 0;  // held from the underlying allocator (arena) or == in use
  size_t num_allocs = 0;
  size_t num_reserves = 0;    // calls to the underlying allocator
  size_t num_stream_waits = 0;  // waits for a reused block's last use on another stream (or on the host)
  // Last uses on other streams that reused blocks carried (for a host allocation: on any stream), each either
  // waited for (num_stream_waits) or found already complete on the device.
  size_t num_foreign_fences = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  virtual void* AllocateOn(size_t bytes, Stream* /*stream*/) { return Allocate(bytes); }
  virtual void FreeAfter(void* p, Stream* /*stream*/) { Free(p); }
  virtual const MemoryInfo& Info() const = 0;
  virtual AllocatorStats Stats() const { return {}; }
};

using AllocatorPtr = std::shared_ptr<Allocator>;

// Aligned host memory (MemoryInfo::Host()).
AllocatorPtr CreateHostAllocator();

}  // namespace tessera
