// Copies between host buffers on the intra-op pool: a run's host feeds into a pinned staging block, its outputs out
// of one. One thread moves ~10 GB/s, so the 2.6 MB of GPT-2's key/value caches in and out of a host-tensor run
// would cost ~0.25 ms on one thread -- more than half a replayed graph. Large sets are cut into pieces of at most
// kHostCopyPiece bytes spread over the pool's threads; small ones are copied on the calling thread.
#pragma once

#include <cstddef>
#include <span>

#include "tessera/ep/thread_pool.h"

namespace tessera {

struct HostCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

inline constexpr size_t kHostCopyPiece = size_t{128} << 10;
inline constexpr size_t kParallelHostCopyBytes = size_t{512} << 10;  // below: one thread (a parallel region costs more)

// Performs every copy (the ranges must not overlap); returns when all are done.
void CopyHostBuffers(const ThreadPool& pool, std::span<const HostCopy> copies);

}  // namespace tessera
