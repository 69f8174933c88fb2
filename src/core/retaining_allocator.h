// RetainingAllocator: an allocator view for work recorded into a graph. Blocks are allocated from the wrapped
// allocator as usual, but a Free only records the block: every block stays out of circulation until the view
// itself is destroyed (with the graph that holds their addresses). A captured run's kernel-internal temporaries
// (freed before the kernel returns) and values released at their last use would otherwise go back to the pool
// and be handed to other work, which the graph's replays would then overwrite. Blocks are not reused within the
// recording either: a kernel may fill a block at recording time (values uploaded outside the capture), and a block
// shared with an earlier node of the graph would be overwritten by that node at every replay. So a recorded run
// holds the sum of what it allocates, not its peak.
#pragma once

#include <mutex>
#include <vector>

#include "tessera/allocator.h"

namespace tessera {

class RetainingAllocator : public Allocator {
 public:
  explicit RetainingAllocator(AllocatorPtr inner) : inner_(std::move(inner)) {}
  // Gives every recorded block back to the wrapped allocator.
  ~RetainingAllocator() override {
    for (void* p : freed_) inner_->Free(p);
  }
  void* Allocate(size_t bytes) override { return inner_->Allocate(bytes); }
  void Free(void* p) override {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    freed_.push_back(p);
  }
  void* AllocateOn(size_t bytes, Stream* stream) override { return inner_->AllocateOn(bytes, stream); }
  void FreeAfter(void* p, Stream* /*stream*/) override { Free(p); }
  const MemoryInfo& Info() const override { return inner_->Info(); }
  AllocatorStats Stats() const override { return inner_->Stats(); }

 private:
  AllocatorPtr inner_;
  std::mutex mutex_;
  std::vector<void*> freed_;
};

}  // namespace tessera
