// RetainingAllocator (src/core/retaining_allocator.h): blocks freed through it stay out of circulation until the
// view is destroyed, then all go back to the wrapped allocator.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "core/retaining_allocator.h"
#include "tessera/tensor.h"

namespace tessera {
namespace {

class CountingAllocator : public Allocator {
 public:
  void* Allocate(size_t bytes) override {
    void* p = ::operator new(bytes);
    live_[p] = bytes;
    return p;
  }
  void Free(void* p) override {
    live_.erase(p);
    ::operator delete(p);
  }
  const MemoryInfo& Info() const override { return info_; }
  size_t live() const { return live_.size(); }

 private:
  MemoryInfo info_ = MemoryInfo::Host();
  std::map<void*, size_t> live_;
};

TEST(RetainingAllocatorTest, FreedBlocksComeBackOnlyWhenTheViewGoes) {
  auto inner = std::make_shared<CountingAllocator>();
  {
    auto view = std::make_shared<RetainingAllocator>(inner);
    void* a = view->Allocate(64);
    void* b = view->AllocateOn(32, nullptr);
    view->Free(a);
    view->FreeAfter(b, nullptr);
    view->Free(nullptr);
    EXPECT_EQ(inner->live(), 2u);  // freed through the view, still held
    { Tensor t = Tensor::Allocate(DataType::kFloat, Shape({4}), view); }  // a tensor's buffer too
    EXPECT_EQ(inner->live(), 3u);
    EXPECT_EQ(view->Info(), MemoryInfo::Host());
  }
  EXPECT_EQ(inner->live(), 0u);
}

}  // namespace
}  // namespace tessera
