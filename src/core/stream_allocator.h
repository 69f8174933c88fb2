// StreamAllocator: a view of an allocator for the work of one session on its streams.
//
// Allocate(bytes) is base->AllocateOn(bytes, use) and Free(p) is base->FreeAfter(p, release): every tensor
// allocated through the view remembers which stream first uses its memory and which one orders its last
// use, also when it is freed long after the run (by the caller, or once a queued copy has completed).
// A session hands views to its kernel steps (use = release = the EP's compute stream) and to copies into
// device memory (use = the copy stream, release = the compute stream that reads the copy).
//
// Detach() is for the end of the session, after it has waited for its streams: later calls no longer
// name the streams (which are about to be destroyed) and behave like base->Allocate / base->Free.
#pragma once

#include <shared_mutex>

#include "tessera/allocator.h"

namespace tessera {

class StreamAllocator : public Allocator {
 public:
  StreamAllocator(AllocatorPtr base, Stream* use, Stream* release);
  void* Allocate(size_t bytes) override;
  void Free(void* p) override;
  void* AllocateOn(size_t bytes, Stream* stream) override { return base_->AllocateOn(bytes, stream); }
  void FreeAfter(void* p, Stream* stream) override { base_->FreeAfter(p, stream); }
  const MemoryInfo& Info() const override { return base_->Info(); }
  AllocatorStats Stats() const override { return base_->Stats(); }
  void Detach();

 private:
  AllocatorPtr base_;
  std::shared_mutex mutex_;  // Detach waits for calls that still name the streams
  Stream* use_;
  Stream* release_;
};

}  // namespace tessera
