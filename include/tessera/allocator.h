// Allocators. An Allocator hands out raw memory in one memory space; the Arena (arena.h) adds
// caching on top of any Allocator.
//
// Contract: Allocate(0) returns a non-null unique pointer that Free accepts. A failed Allocate throws
// Error(kOutOfMemory) naming the memory space and the size; it never returns null. Free(p) must be
// called with a pointer from the same allocator. Allocate/Free are thread-safe.
#pragma once

#include <cstddef>
#include <memory>

#include "tessera/device.h"

namespace tessera {

struct AllocatorStats {
  size_t bytes_in_use = 0;
  size_t peak_bytes_in_use = 0;
  size_t bytes_reserved = 0;  // held from the underlying allocator (arena) or == in use
  size_t num_allocs = 0;
  size_t num_reserves = 0;    // calls to the underlying allocator
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  virtual const MemoryInfo& Info() const = 0;
  virtual AllocatorStats Stats() const { return {}; }
};

using AllocatorPtr = std::shared_ptr<Allocator>;

// Aligned host memory (MemoryInfo::Host()).
AllocatorPtr CreateHostAllocator();

}  // namespace tessera
