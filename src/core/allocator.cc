#include "tessera/allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "tessera/status.h"

namespace tessera {

namespace {

// Aligned host memory straight from the C library; thread-safe, counts bytes in use.
class HostAllocator : public Allocator {
 public:
  HostAllocator() : info_(MemoryInfo::Host()) { info_.allocator_type = AllocatorType::kDevice; }

  void* Allocate(size_t bytes) override {
    const size_t alignment = info_.alignment;
    const size_t rounded = std::max<size_t>(alignment, (bytes + alignment - 1) / alignment * alignment);
    void* p = std::aligned_alloc(alignment, rounded);
    if (p == nullptr) Fail(ErrorCode::kOutOfMemory, "host memory: failed to allocate ", bytes, " bytes");
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytes_in_use += rounded;
    stats_.bytes_reserved = stats_.bytes_in_use;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    ++stats_.num_allocs;
    ++stats_.num_reserves;
    sizes_[p] = rounded;
    return p;
  }

  void Free(void* p) override {
    if (p == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = sizes_.find(p);
      if (it == sizes_.end()) Fail(ErrorCode::kInvalidArgument, "host allocator: Free of a pointer it did not allocate");
      stats_.bytes_in_use -= it->second;
      stats_.bytes_reserved = stats_.bytes_in_use;
      sizes_.erase(it);
    }
    std::free(p);
  }

  const MemoryInfo& Info() const override { return info_; }
  AllocatorStats Stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  MemoryInfo info_;
  mutable std::mutex mutex_;
  AllocatorStats stats_;
  std::unordered_map<void*, size_t> sizes_;
};

}  // namespace

AllocatorPtr CreateHostAllocator() { return std::make_shared<HostAllocator>(); }

}  // namespace tessera
