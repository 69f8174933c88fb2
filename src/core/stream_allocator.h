// StreamAllocator: a view of an allocator for the work of one session on its streams.
//
// Allocate(bytes) is base->AllocateOn(bytes, use) and Free(p) is base->FreeAfter(p, release): every tensor
// allocated through the view remembers which stream first uses its memory and which one orders its last
// use, also when it is freed long after the run (by the caller, or once a queued copy has completed).
// A session hands views to its kernel steps (use = release = the EP's compute stream) and to copies into
// device memory (use = the copy stream, release = the compute stream that reads the copy).
//
// Same-stream reuse cache. A view whose use and release streams are the same keeps the blocks freed through it
// (each up to kMaxCachedBlockBytes, together up to the constructor's cache_bytes) and hands them to its next allocations of the
// same rounded size. Work queued on one stream runs in order, so such a block needs no fence: reuse costs neither
// the base allocator's lock, which every run's stream shares, nor a device event per free. In steady state (the
// same shapes run after run) a run allocates and frees only through this cache. Cached blocks stay in use as far
// as the base allocator's statistics go; Trim() gives them back (after an allocation the base refuses, and at
// Detach).
//
// Detach() is for the end of the session, after it has waited for its streams: later calls no longer
// name the streams (which are about to be destroyed) and behave like base->Allocate / base->Free.
#pragma once

#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "tessera/allocator.h"

namespace tessera {

class StreamAllocator : public Allocator {
 public:
  static constexpr size_t kMaxCachedBlockBytes = size_t{16} << 20;

  // cache_bytes: how much the same-stream cache may hold (0: no cache).
  StreamAllocator(AllocatorPtr base, Stream* use, Stream* release, size_t cache_bytes);
  ~StreamAllocator() override;
  void* Allocate(size_t bytes) override;
  void Free(void* p) override;
  void* AllocateOn(size_t bytes, Stream* stream) override { return base_->AllocateOn(bytes, stream); }
  void FreeAfter(void* p, Stream* stream) override { base_->FreeAfter(p, stream); }
  const MemoryInfo& Info() const override { return base_->Info(); }
  AllocatorStats Stats() const override { return base_->Stats(); }
  // Gives every cached block back to the base allocator (ordered after the release stream); returns their bytes.
  size_t Trim();
  // Bytes of freed blocks the cache holds.
  size_t CachedBytes() const;
  void Detach();

 private:
  size_t TrimLocked();  // with cache_mutex_ and a shared lock on mutex_ held
  void ReleaseToBase(void* p);  // with a shared lock on mutex_ held

  AllocatorPtr base_;
  std::shared_mutex mutex_;  // Detach waits for calls that still name the streams
  Stream* use_;
  Stream* release_;
  bool caching_;  // use_ == release_ (not a copy view) and cache_bytes_ > 0, until Detach
  size_t cache_bytes_;

  mutable std::mutex cache_mutex_;
  std::unordered_map<void*, size_t> live_;                     // blocks handed out by this view: rounded size
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // freed blocks by rounded size
  size_t cached_bytes_ = 0;
};

}  // namespace tessera
