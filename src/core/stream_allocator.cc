#include "core/stream_allocator.h"

#include <mutex>

namespace tessera {

StreamAllocator::StreamAllocator(AllocatorPtr base, Stream* use, Stream* release)
    : base_(std::move(base)), use_(use), release_(release) {}

void* StreamAllocator::Allocate(size_t bytes) {
  std::shared_lock lock(mutex_);
  return base_->AllocateOn(bytes, use_);
}

void StreamAllocator::Free(void* p) {
  std::shared_lock lock(mutex_);
  base_->FreeAfter(p, release_);
}

void StreamAllocator::Detach() {
  std::unique_lock lock(mutex_);
  use_ = nullptr;
  release_ = nullptr;
}

}  // namespace tessera
