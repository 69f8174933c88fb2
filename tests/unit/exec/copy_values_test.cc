// CopyValuesTo (exec/executor.h): feeds and outputs cross between memories as one batch. A fake device whose
// transfer records every Copy call shows how the batch was formed: one ordering of the streams, one call for the
// tensors copied directly, and one staging block and one DMA for the small pageable host tensors, whose device
// tensors are aligned views of one device block.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "exec/executor.h"
#include "tessera/ep/data_transfer.h"

namespace tessera::test {
namespace {

MemoryInfo FakeMemory(const char* name, MemoryType type) {
  MemoryInfo info;
  info.name = name;
  info.device_type = DeviceType::kNpu;
  info.vendor_id = 0x1234;
  info.memory_type = type;
  return info;
}
const MemoryInfo kDevice = FakeMemory("FakeDevice", MemoryType::kDefault);
const MemoryInfo kStaging = FakeMemory("FakeStaging", MemoryType::kHostAccessible);

// Host memory that calls itself `info` (the fake device's memory is plain host memory underneath).
class LabelledAllocator : public Allocator {
 public:
  explicit LabelledAllocator(MemoryInfo info) : host_(CreateHostAllocator()), info_(std::move(info)) {}
  void* Allocate(size_t bytes) override {
    ++allocations;
    return host_->Allocate(bytes);
  }
  void Free(void* p) override { host_->Free(p); }
  const MemoryInfo& Info() const override { return info_; }
  int allocations = 0;

 private:
  AllocatorPtr host_;
  MemoryInfo info_;
};

class FakeEvent : public Event {
 public:
  explicit FakeEvent(int* records) : records_(records) {}
  void Record(Stream&) override { ++*records_; }
  void Wait(Stream&) override {}
  void Synchronize() override {}
  bool Query() override { return true; }

 private:
  int* records_;
};

// A stream whose work is done at once.
class FakeStream : public Stream {
 public:
  void* native_handle() const override { return nullptr; }
  void Synchronize() override {}
  std::unique_ptr<Event> CreateEvent() override { return std::make_unique<FakeEvent>(&records); }
  const MemoryInfo& memory_info() const override { return kDevice; }
  int records = 0;
};

// Copies at once and remembers each call's byte counts.
class RecordingTransfer : public DataTransfer {
 public:
  bool CanCopy(const MemoryInfo&, const MemoryInfo&) const override { return true; }
  void Copy(std::span<const CopyPair> pairs, Stream* stream) override {
    std::vector<size_t> bytes;
    for (const CopyPair& p : pairs) {
      EXPECT_EQ(p.src->SizeInBytes(), p.dst->SizeInBytes());
      std::memcpy(p.dst->raw_data(), p.src->raw_data(), p.src->SizeInBytes());
      bytes.push_back(p.src->SizeInBytes());
    }
    calls.push_back({bytes, stream != nullptr});
  }
  struct Call {
    std::vector<size_t> bytes;
    bool on_stream;
  };
  std::vector<Call> calls;
};

struct FakeDevice {
  FakeStream compute, copy;
  RecordingTransfer transfer;
  std::shared_ptr<LabelledAllocator> device = std::make_shared<LabelledAllocator>(kDevice);
  std::shared_ptr<LabelledAllocator> staging = std::make_shared<LabelledAllocator>(kStaging);
  AllocatorPtr host = CreateHostAllocator();
  bool with_staging = true;

  PlanServices Services() {
    PlanServices s;
    s.find_transfer = [this](const MemoryInfo&, const MemoryInfo&) -> DataTransfer* { return &transfer; };
    s.allocator_for = [this](const MemoryInfo& info) -> AllocatorPtr {
      if (info == kDevice) return device;
      if (info == kStaging) return staging;
      return host;
    };
    s.stream_for = [this](const MemoryInfo& info) -> Stream* { return info == kDevice ? &compute : nullptr; };
    s.copy_stream_for = [this](const MemoryInfo&, const MemoryInfo&) -> Stream* { return &copy; };
    s.allocator_on = [s](const MemoryInfo& info, Stream*) { return s.allocator_for(info); };
    if (with_staging)
      s.staging_memory_for = [](const MemoryInfo& info) -> std::optional<MemoryInfo> {
        return info == kDevice ? std::optional<MemoryInfo>(kStaging) : std::nullopt;
      };
    return s;
  }
};

Tensor Counting(DataType type, int64_t n, int start) {
  Tensor t = Tensor::Allocate(type, Shape{n});
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.SizeInBytes(); ++i) bytes[i] = static_cast<unsigned char>(start + 7 * i);
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.SizeInBytes()) == 0;
}

TEST(CopyValuesTest, SmallHostTensorsShareOneStagingBlockAndOneCopy) {
  FakeDevice fake;
  const PlanServices services = fake.Services();
  // 3 floats, 5 int64s, 7 bytes (odd size: the next tensor must still be aligned), 70000 floats (too large to
  // stage), an empty tensor, 1000 float16s, and one already on the device.
  std::vector<Value> values = {Value(Counting(DataType::kFloat, 3, 1)),  Value(Counting(DataType::kInt64, 5, 2)),
                               Value(Counting(DataType::kUInt8, 7, 3)),  Value(Counting(DataType::kFloat, 70000, 4)),
                               Value(Counting(DataType::kFloat, 0, 5)),  Value(Counting(DataType::kFloat16, 1000, 6))};
  Tensor resident = Tensor::Allocate(DataType::kFloat, Shape{2}, fake.device);
  values.emplace_back(resident);
  std::vector<MemoryInfo> where(values.size(), kDevice);
  std::vector<Value> out = CopyValuesTo(values, where, services, false);
  ASSERT_EQ(out.size(), values.size());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(out[i].is_tensor()) << i;
    EXPECT_EQ(out[i].tensor().memory_info(), kDevice) << i;
    EXPECT_TRUE(SameBytes(out[i].tensor(), values[i].tensor())) << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(out[i].tensor().raw_data()) % kDevice.alignment, 0u) << i;
  }
  // The staged ones lie in one block, 256 bytes apart at least, so each keeps the block's alignment.
  const auto* block = static_cast<const char*>(out[0].tensor().raw_data());
  for (size_t i : {1, 2, 5}) {
    const ptrdiff_t offset = static_cast<const char*>(out[i].tensor().raw_data()) - block;
    EXPECT_GT(offset, 0) << i;
    EXPECT_EQ(offset % 256, 0) << i;
  }
  EXPECT_EQ(out[6].tensor().raw_data(), resident.raw_data());  // already there: not copied
  // One DMA for the four staged tensors (12, 40, 7 and 2000 bytes, each rounded up to 256), one call for
  // the large and the empty tensor, both on the copy stream.
  ASSERT_EQ(fake.transfer.calls.size(), 2u);
  EXPECT_EQ(fake.transfer.calls[0].bytes, std::vector<size_t>{3 * 256 + 2048});
  EXPECT_EQ(fake.transfer.calls[1].bytes, (std::vector<size_t>{280000, 0}));
  EXPECT_TRUE(fake.transfer.calls[0].on_stream && fake.transfer.calls[1].on_stream);
  EXPECT_EQ(fake.staging->allocations, 1);
  EXPECT_EQ(fake.device->allocations, 1 + 1 + 2);  // `resident`, the staged block, the two direct tensors
  // The copy stream is ordered once before the compute stream for the whole batch.
  EXPECT_EQ(fake.copy.records, 1);
  // The staged views keep their block alive on their own.
  Tensor view = out[0].tensor();
  out.clear();
  EXPECT_TRUE(SameBytes(view, values[0].tensor()));
}

TEST(CopyValuesTest, WithoutStagingMemoryEveryTensorIsCopiedDirectlyInOneCall) {
  FakeDevice fake;
  fake.with_staging = false;
  const PlanServices services = fake.Services();
  std::vector<Value> values = {Value(Counting(DataType::kFloat, 3, 1)), Value(Counting(DataType::kInt32, 9, 2))};
  std::vector<MemoryInfo> where(values.size(), kDevice);
  std::vector<Value> out = CopyValuesTo(values, where, services, true);
  ASSERT_EQ(fake.transfer.calls.size(), 1u);
  EXPECT_EQ(fake.transfer.calls[0].bytes, (std::vector<size_t>{12, 36}));
  EXPECT_EQ(fake.staging->allocations, 0);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_TRUE(SameBytes(out[i].tensor(), values[i].tensor())) << i;
}

TEST(CopyValuesTest, DeviceTensorsComeBackToTheHostInOneCallAndNoneStaysNone) {
  FakeDevice fake;
  const PlanServices services = fake.Services();
  std::vector<Value> on_device = CopyValuesTo(
      std::vector<Value>{Value(Counting(DataType::kFloat, 4, 1)), Value(Counting(DataType::kFloat, 6, 9))},
      std::vector<MemoryInfo>(2, kDevice), services, false);
  fake.transfer.calls.clear();
  std::vector<Value> values(3);  // values[1] stays none
  values[0] = on_device[0];
  values[2] = on_device[1];
  std::vector<MemoryInfo> where = {MemoryInfo::Host(), MemoryInfo::Host(), kStaging};
  std::vector<Value> out = CopyValuesTo(values, where, services, true);
  EXPECT_TRUE(out[1].is_none());
  EXPECT_EQ(out[0].tensor().memory_info(), MemoryInfo::Host());
  EXPECT_EQ(out[2].tensor().memory_info(), kStaging);
  EXPECT_TRUE(SameBytes(out[0].tensor(), on_device[0].tensor()));
  EXPECT_TRUE(SameBytes(out[2].tensor(), on_device[1].tensor()));
  EXPECT_EQ(fake.transfer.calls.size(), 2u);  // one per destination memory
}

TEST(CopyValuesTest, MismatchedListsAreAnError) {
  FakeDevice fake;
  std::vector<Value> values = {Value(Counting(DataType::kFloat, 3, 1))};
  std::vector<MemoryInfo> where;
  EXPECT_THROW(CopyValuesTo(values, where, fake.Services(), false), Error);
}

}  // namespace
}  // namespace tessera::test
