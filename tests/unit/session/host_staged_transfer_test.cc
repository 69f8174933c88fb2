// HostStagedTransfer: a copy between two memories without a direct path goes down to host memory with one
// transfer and up with the other, waiting first for the stream it is given.
#include <gtest/gtest.h>

#include <cstring>

#include "session/host_staged_transfer.h"

namespace tessera::test {
namespace {

MemoryInfo Device(uint32_t vendor, const char* name) {
  MemoryInfo info;
  info.name = name;
  info.device_type = DeviceType::kGpu;
  info.vendor_id = vendor;
  return info;
}
const MemoryInfo kA = Device(0x1111, "A"), kB = Device(0x2222, "B");

class Labelled : public Allocator {
 public:
  explicit Labelled(MemoryInfo info) : host_(CreateHostAllocator()), info_(std::move(info)) {}
  void* Allocate(size_t bytes) override { return host_->Allocate(bytes); }
  void Free(void* p) override { host_->Free(p); }
  const MemoryInfo& Info() const override { return info_; }

 private:
  AllocatorPtr host_;
  MemoryInfo info_;
};

// Copies between `from` and `to` only, synchronously, remembering the memories of each pair it copied.
class OneWay : public DataTransfer {
 public:
  OneWay(MemoryInfo from, MemoryInfo to) : from_(std::move(from)), to_(std::move(to)) {}
  bool CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const override { return src == from_ && dst == to_; }
  void Copy(std::span<const CopyPair> pairs, Stream* stream) override {
    EXPECT_EQ(stream, nullptr);
    for (const CopyPair& p : pairs) {
      EXPECT_TRUE(CanCopy(p.src->memory_info(), p.dst->memory_info()));
      std::memcpy(p.dst->raw_data(), p.src->raw_data(), p.src->SizeInBytes());
      ++copied;
    }
  }
  int copied = 0;

 private:
  MemoryInfo from_, to_;
};

class CountingStream : public Stream {
 public:
  void* native_handle() const override { return nullptr; }
  void Synchronize() override { ++waits; }
  std::unique_ptr<Event> CreateEvent() override { return nullptr; }
  const MemoryInfo& memory_info() const override { return kA; }
  int waits = 0;
};

TEST(HostStagedTransferTest, CopiesDownToTheHostThenUp) {
  OneWay down(kA, MemoryInfo::Host()), up(MemoryInfo::Host(), kB);
  HostStagedTransfer transfer(kA, kB, &down, &up, CreateHostAllocator());
  EXPECT_TRUE(transfer.CanCopy(kA, kB));
  EXPECT_FALSE(transfer.CanCopy(kB, kA));
  auto a = std::make_shared<Labelled>(kA);
  auto b = std::make_shared<Labelled>(kB);
  Tensor src1 = Tensor::Allocate(DataType::kFloat, Shape{3}, a), src2 = Tensor::Allocate(DataType::kInt64, Shape{2}, a);
  const float f[3] = {1.5f, -2.0f, 3.25f};
  const int64_t i[2] = {7, -9};
  std::memcpy(src1.raw_data(), f, sizeof f);
  std::memcpy(src2.raw_data(), i, sizeof i);
  Tensor dst1 = Tensor::Allocate(DataType::kFloat, Shape{3}, b), dst2 = Tensor::Allocate(DataType::kInt64, Shape{2}, b);
  const CopyPair pairs[2] = {{&src1, &dst1}, {&src2, &dst2}};
  CountingStream stream;
  transfer.Copy(pairs, &stream);
  EXPECT_EQ(stream.waits, 1);  // the producers on the stream finish first
  EXPECT_EQ(down.copied, 2);
  EXPECT_EQ(up.copied, 2);
  EXPECT_EQ(std::memcmp(dst1.raw_data(), f, sizeof f), 0);
  EXPECT_EQ(std::memcmp(dst2.raw_data(), i, sizeof i), 0);
}

TEST(HostStagedTransferTest, APairOfOtherMemoriesIsRefused) {
  OneWay down(kA, MemoryInfo::Host()), up(MemoryInfo::Host(), kB);
  HostStagedTransfer transfer(kA, kB, &down, &up, CreateHostAllocator());
  Tensor host = Tensor::Allocate(DataType::kFloat, Shape{2});
  Tensor other = Tensor::Allocate(DataType::kFloat, Shape{2});
  const CopyPair pair{&host, &other};
  EXPECT_THROW(transfer.Copy({&pair, 1}, nullptr), Error);
  EXPECT_EQ(down.copied, 0);
}

}  // namespace
}  // namespace tessera::test
