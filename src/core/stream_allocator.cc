#include "core/stream_allocator.h"

#include <algorithm>

#include "tessera/status.h"

namespace tessera {

namespace {

// Sizes round up like the arena's chunks, so that tensors of nearly the same size share cached blocks.
size_t CacheSize(size_t bytes) {
  constexpr size_t kGranule = 256;
  return (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
}

}  // namespace

StreamAllocator::StreamAllocator(AllocatorPtr base, Stream* use, Stream* release, size_t cache_bytes)
    : base_(std::move(base)),
      use_(use),
      release_(release),
      caching_(use != nullptr && use == release && cache_bytes > 0),
      cache_bytes_(cache_bytes) {}

StreamAllocator::~StreamAllocator() { Trim(); }

void* StreamAllocator::Allocate(size_t bytes) {
  std::shared_lock lock(mutex_);
  if (!caching_) return base_->AllocateOn(bytes, use_);
  const size_t size = CacheSize(bytes);
  {
    std::lock_guard<std::mutex> cache(cache_mutex_);
    auto it = free_blocks_.find(size);
    if (it != free_blocks_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= size;
      live_.emplace(p, size);
      return p;
    }
  }
  void* p = nullptr;
  try {
    p = base_->AllocateOn(size, use_);
  } catch (const Error& e) {
    // Memory this view keeps for reuse may be what the base lacks: give it back and try once more.
    if (e.code() != ErrorCode::kOutOfMemory) throw;
    {
      std::lock_guard<std::mutex> cache(cache_mutex_);
      if (TrimLocked() == 0) throw;
    }
    p = base_->AllocateOn(size, use_);
  }
  std::lock_guard<std::mutex> cache(cache_mutex_);
  live_.emplace(p, size);
  return p;
}

void StreamAllocator::Free(void* p) {
  if (p == nullptr) return;
  std::shared_lock lock(mutex_);
  {
    std::lock_guard<std::mutex> cache(cache_mutex_);
    auto it = live_.find(p);
    if (it != live_.end()) {
      const size_t size = it->second;
      live_.erase(it);
      if (caching_ && size <= kMaxCachedBlockBytes && cached_bytes_ + size <= cache_bytes_) {
        free_blocks_[size].push_back(p);
        cached_bytes_ += size;
        return;
      }
    }
  }
  ReleaseToBase(p);
}

void StreamAllocator::ReleaseToBase(void* p) { base_->FreeAfter(p, release_); }

size_t StreamAllocator::TrimLocked() {
  const size_t bytes = cached_bytes_;
  for (auto& [size, blocks] : free_blocks_)
    for (void* p : blocks) ReleaseToBase(p);
  free_blocks_.clear();
  cached_bytes_ = 0;
  return bytes;
}

size_t StreamAllocator::Trim() {
  std::shared_lock lock(mutex_);
  std::lock_guard<std::mutex> cache(cache_mutex_);
  return TrimLocked();
}

size_t StreamAllocator::CachedBytes() const {
  std::lock_guard<std::mutex> cache(cache_mutex_);
  return cached_bytes_;
}

void StreamAllocator::Detach() {
  std::unique_lock lock(mutex_);
  {
    // The session has waited for its streams: the cached blocks go back without naming them.
    std::lock_guard<std::mutex> cache(cache_mutex_);
    for (auto& [size, blocks] : free_blocks_)
      for (void* p : blocks) base_->Free(p);
    free_blocks_.clear();
    cached_bytes_ = 0;
    caching_ = false;
  }
  use_ = nullptr;
  release_ = nullptr;
}

}  // namespace tessera
