#include "providers/testing/testing_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <utility>

namespace tessera::testing_ep {

namespace {

struct Mapping {
  size_t size;
  char* view;  // the read-write view of the same pages
  uint32_t ordinal;  // the instance whose memory it is
};

// Every live device allocation, by the address of its PROT_NONE (device) mapping.
class MappingTable {
 public:
  static MappingTable& Get() {
    // Never destroyed: allocators and streams may outlive static destruction order.
    static auto* table = new MappingTable;
    return *table;
  }

  // Returns the device address and the (page-rounded) size mapped.
  std::pair<void*, size_t> Map(size_t bytes, uint32_t ordinal) {
    const size_t size = RoundToPages(std::max<size_t>(bytes, 1));
    std::unique_lock lock(mutex_);
    size_t& mapped_bytes = mapped_bytes_[ordinal];
    if (mapped_bytes + size > kDeviceMemoryBytes)
      Fail(ErrorCode::kOutOfMemory, DeviceMemoryInfo(ordinal).ToString(), ": cannot allocate ", bytes, " bytes (",
           mapped_bytes, " of ", kDeviceMemoryBytes, " bytes in use)");
    const int fd = memfd_create("tessera-testing-device", MFD_CLOEXEC);
    if (fd < 0) FailSystem("memfd_create", bytes, ordinal);
    char* device = nullptr;
    char* view = nullptr;
    if (ftruncate(fd, static_cast<off_t>(size)) == 0) {
      device = MapView(fd, size, PROT_NONE);
      view = MapView(fd, size, PROT_READ | PROT_WRITE);
    }
    const int saved_errno = errno;
    close(fd);  // the mappings keep the memory alive
    if (device == nullptr || view == nullptr) {
      if (device != nullptr) munmap(device, size);
      if (view != nullptr) munmap(view, size);
      errno = saved_errno;
      FailSystem("mmap", bytes, ordinal);
    }
    mappings_.emplace(reinterpret_cast<uintptr_t>(device), Mapping{size, view, ordinal});
    mapped_bytes += size;
    return {device, size};
  }

  // Returns the size of the mapping released.
  size_t Unmap(void* device) {
    std::unique_lock lock(mutex_);
    auto it = mappings_.find(reinterpret_cast<uintptr_t>(device));
    if (it == mappings_.end())
      Fail(ErrorCode::kInvalidArgument, DeviceMemoryInfo().ToString(),
           ": Free of a pointer that is not a device allocation");
    const size_t size = it->second.size;
    munmap(device, size);
    munmap(it->second.view, size);
    mapped_bytes_[it->second.ordinal] -= size;
    mappings_.erase(it);
    return size;
  }

  void* View(const void* device, size_t bytes) const {
    const auto address = reinterpret_cast<uintptr_t>(device);
    std::shared_lock lock(mutex_);
    auto it = mappings_.upper_bound(address);
    if (it != mappings_.begin()) {
      --it;
      const uintptr_t offset = address - it->first;
      if (offset <= it->second.size && bytes <= it->second.size - offset) return it->second.view + offset;
    }
    Fail(ErrorCode::kInvalidArgument, "pointer ", device, " (", bytes, " bytes) is not in ",
         DeviceMemoryInfo().ToString());
  }

 private:
  static size_t RoundToPages(size_t bytes) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
  }

  static char* MapView(int fd, size_t size, int protection) {
    void* p = mmap(nullptr, size, protection, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }

  [[noreturn]] static void FailSystem(const char* call, size_t bytes, uint32_t ordinal) {
    Fail(ErrorCode::kOutOfMemory, DeviceMemoryInfo(ordinal).ToString(), ": cannot allocate ", bytes, " bytes: ",
         call, " failed: ", std::strerror(errno));
  }

  mutable std::shared_mutex mutex_;
  std::map<uintptr_t, Mapping> mappings_;
  std::array<size_t, kMaxDevices> mapped_bytes_{};  // per instance
};

MemoryInfo MakeMemoryInfo(const char* name, uint32_t ordinal, MemoryType type, AllocatorType allocator_type) {
  MemoryInfo info;
  info.name = name;
  info.device_type = DeviceType::kNpu;
  info.vendor_id = kVendorId;
  info.device_id = ordinal;
  info.memory_type = type;
  info.alignment = 64;
  info.allocator_type = allocator_type;
  return info;
}

// One memory info of each kind per possible instance, built once.
template <size_t... I>
std::array<MemoryInfo, kMaxDevices> MakeInfos(const char* name, MemoryType type, AllocatorType allocator_type,
                                              std::index_sequence<I...>) {
  return {MakeMemoryInfo(name, static_cast<uint32_t>(I), type, allocator_type)...};
}

uint32_t CheckedOrdinal(uint32_t ordinal) {
  if (ordinal >= kMaxDevices)
    Fail(ErrorCode::kInvalidArgument, "testing device ", ordinal, " does not exist (at most ", kMaxDevices, ")");
  return ordinal;
}

bool IsTestingMemory(const MemoryInfo& info, MemoryType type) {
  return info.device_type == DeviceType::kNpu && info.vendor_id == kVendorId && info.device_id < kMaxDevices &&
         info.memory_type == type;
}

}  // namespace

const MemoryInfo& DeviceMemoryInfo(uint32_t ordinal) {
  static const std::array<MemoryInfo, kMaxDevices> infos =
      MakeInfos("Testing", MemoryType::kDefault, AllocatorType::kArena, std::make_index_sequence<kMaxDevices>());
  return infos[CheckedOrdinal(ordinal)];
}

const MemoryInfo& HostAccessibleMemoryInfo(uint32_t ordinal) {
  static const std::array<MemoryInfo, kMaxDevices> infos = MakeInfos(
      "TestingHostAccessible", MemoryType::kHostAccessible, AllocatorType::kDevice, std::make_index_sequence<kMaxDevices>());
  return infos[CheckedOrdinal(ordinal)];
}

bool IsDeviceMemory(const MemoryInfo& info) {
  return IsTestingMemory(info, MemoryType::kDefault) && info == DeviceMemoryInfo(info.device_id);
}

bool IsOwnMemory(const MemoryInfo& info) {
  return IsDeviceMemory(info) ||
         (IsTestingMemory(info, MemoryType::kHostAccessible) && info == HostAccessibleMemoryInfo(info.device_id));
}

void* DeviceView(const void* device_ptr, size_t bytes) { return MappingTable::Get().View(device_ptr, bytes); }

void* DeviceAccessibleData(const Tensor& t, const char* what) {
  const MemoryInfo& info = t.memory_info();
  if (IsDeviceMemory(info)) return DeviceView(t.raw_data(), t.SizeInBytes());
  if (info.IsHostReadable()) return const_cast<void*>(t.raw_data());
  Fail(ErrorCode::kInvalidArgument, what, " is in ", info.ToString(), ", which the testing device cannot access");
}

DeviceAllocator::DeviceAllocator(uint32_t ordinal) : info_(DeviceMemoryInfo(ordinal)) {
  info_.allocator_type = AllocatorType::kDevice;
}

void* DeviceAllocator::Allocate(size_t bytes) {
  const auto [p, size] = MappingTable::Get().Map(bytes, info_.device_id);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use += size;
  stats_.bytes_reserved = stats_.bytes_in_use;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  ++stats_.num_reserves;
  return p;
}

void DeviceAllocator::Free(void* p) {
  if (p == nullptr) return;
  const size_t size = MappingTable::Get().Unmap(p);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= size;
  stats_.bytes_reserved = stats_.bytes_in_use;
}

AllocatorStats DeviceAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

HostAccessibleAllocator::HostAccessibleAllocator(uint32_t ordinal)
    : host_(CreateHostAllocator()), info_(HostAccessibleMemoryInfo(ordinal)) {}

void* FailingAllocator::AllocateOn(size_t bytes, Stream* stream) {
  if (made_.fetch_add(1) >= allowed_)
    Fail(ErrorCode::kOutOfMemory, Info().ToString(), ": cannot allocate ", bytes,
         " bytes: allocations fail after the first ", allowed_, " (fail_allocations_after)");
  return inner_->AllocateOn(bytes, stream);
}

}  // namespace tessera::testing_ep
