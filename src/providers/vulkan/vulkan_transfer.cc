#include "vulkan_transfer.h"

#include <cstring>

#include "vulkan_kernels.h"
#include "vulkan_stream.h"
#include "tessera/status.h"

namespace tessera::vulkan_ep {

namespace {

bool IsDeviceLocal(const MemoryInfo& info) { return info.memory_type == MemoryType::kDefault; }

// One device copy: vkCmdCopyBuffer between the EP's own buffers, the address-copy shader when either side is an
// application's buffer the EP knows only by its device address.
void CopyRanges(VulkanStream& s, const BufferRange& src, const BufferRange& dst, size_t bytes) {
  if (src.buffer != VK_NULL_HANDLE && dst.buffer != VK_NULL_HANDLE)
    s.CopyBuffer(src, dst, bytes);
  else
    RecordAddressCopy(s, src.device_address, dst.device_address, bytes);
}

// Staging memory from `staging`, freed when the last holder lets go.
std::shared_ptr<void> Stage(const AllocatorPtr& staging, size_t bytes, void** data) {
  void* p = staging->Allocate(bytes);
  *data = p;
  return std::shared_ptr<void>(p, [staging](void* q) { staging->Free(q); });
}

}  // namespace

bool VulkanDataTransfer::CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const {
  const bool src_ours = devices_.Owns(src), dst_ours = devices_.Owns(dst);
  if (!src_ours && !dst_ours) return false;
  return (src_ours || src.IsHostReadable()) && (dst_ours || dst.IsHostReadable());
}

void VulkanDataTransfer::Copy(std::span<const CopyPair> pairs, Stream* stream) {
  for (const CopyPair& pair : pairs) CopyOne(*pair.src, *pair.dst, stream);
}

void VulkanDataTransfer::CopyOne(const Tensor& src, Tensor& dst, Stream* stream) {
  const size_t bytes = src.SizeInBytes();
  if (dst.SizeInBytes() != bytes)
    Fail(ErrorCode::kInvalidArgument, kEpName, ": copy of ", src.Describe(), " into ", dst.Describe(),
         ": sizes differ");
  if (bytes == 0) return;
  const MemoryInfo& si = src.memory_info();
  const MemoryInfo& di = dst.memory_info();
  const bool src_device = devices_.Owns(si) && IsDeviceLocal(si);
  const bool dst_device = devices_.Owns(di) && IsDeviceLocal(di);
  const void* src_data = src.raw_data();
  void* dst_data = dst.raw_data();

  if (!src_device && !dst_device) {  // host-readable on both sides (one of them the EP's host-visible memory)
    if (stream != nullptr) stream->Synchronize();  // device work on either buffer comes first
    std::memmove(dst_data, src_data, bytes);
    return;
  }
  if (src_device && dst_device && si.device_id != di.device_id) {  // two Vulkan devices: through the host
    std::vector<char> host(bytes);
    Tensor bounce = Tensor::Wrap(DataType::kUInt8, Shape({static_cast<int64_t>(bytes)}), host.data(), bytes,
                                 MemoryInfo::Host());
    Tensor src_bytes = Tensor::Wrap(DataType::kUInt8, Shape({static_cast<int64_t>(bytes)}),
                                    const_cast<void*>(src_data), bytes, si);
    Tensor dst_bytes = Tensor::Wrap(DataType::kUInt8, Shape({static_cast<int64_t>(bytes)}), dst_data, bytes, di);
    CopyOne(src_bytes, bounce, stream);
    CopyOne(bounce, dst_bytes, nullptr);
    return;
  }

  const uint32_t ordinal = src_device ? si.device_id : di.device_id;
  std::shared_ptr<VulkanDevice> device = devices_.Get(ordinal);
  OnStream(*device, stream, [&](VulkanStream& s) {
    if (src_device && dst_device) {
      CopyRanges(s, device->ResolveOrAddress(src_data, bytes), device->ResolveOrAddress(dst_data, bytes), bytes);
      s.KeepAlive(src.buffer());
      s.KeepAlive(dst.buffer());
      return;
    }
    if (dst_device) {  // host -> device
      if (device->IsHostVisiblePointer(src_data)) {
        CopyRanges(s, device->ResolveOrAddress(src_data, bytes), device->ResolveOrAddress(dst_data, bytes), bytes);
        s.KeepAlive(src.buffer());
      } else {
        void* staged = nullptr;
        std::shared_ptr<void> holder = Stage(device->Staging(), bytes, &staged);
        std::memcpy(staged, src_data, bytes);
        CopyRanges(s, device->Resolve(staged, bytes), device->ResolveOrAddress(dst_data, bytes), bytes);
        s.KeepAlive(std::move(holder));
      }
      s.KeepAlive(dst.buffer());
      return;
    }
    // device -> host
    if (device->IsHostVisiblePointer(dst_data)) {
      CopyRanges(s, device->ResolveOrAddress(src_data, bytes), device->ResolveOrAddress(dst_data, bytes), bytes);
      s.KeepAlive(src.buffer());
      s.KeepAlive(dst.buffer());
      return;
    }
    void* staged = nullptr;
    std::shared_ptr<void> holder = Stage(device->Staging(), bytes, &staged);
    CopyRanges(s, device->ResolveOrAddress(src_data, bytes), device->Resolve(staged, bytes), bytes);
    s.KeepAlive(src.buffer());
    s.Synchronize();  // pageable memory: the data is readable only once the device has written the staging buffer
    std::memcpy(dst_data, staged, bytes);
  });
}

bool VulkanDataTransfer::CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const {
  return devices_.Owns(src) && devices_.Owns(dst) && src.device_id == dst.device_id;
}

void VulkanDataTransfer::CopyRegions(std::span<const CopyRegion> regions, Stream* stream) {
  for (const CopyRegion& r : regions) {
    if (!CanCopyRegions(r.src->memory_info(), r.dst->memory_info()))
      Fail(ErrorCode::kInvalidArgument, kEpName, ": cannot copy regions of ", r.src->Describe(), " to ",
           r.dst->Describe(), " (both must be this EP's memory on one device)");
    if (r.rows == 0 || r.row_bytes == 0) continue;
    std::shared_ptr<VulkanDevice> device = devices_.Get(r.src->memory_info().device_id);
    const size_t src_extent = (r.rows - 1) * r.src_pitch + r.row_bytes;
    const size_t dst_extent = (r.rows - 1) * r.dst_pitch + r.row_bytes;
    const auto* from = static_cast<const uint8_t*>(r.src->raw_data()) + r.src_offset;
    auto* to = static_cast<uint8_t*>(r.dst->raw_data()) + r.dst_offset;
    OnStream(*device, stream, [&](VulkanStream& s) {
      const BufferRange src = device->ResolveOrAddress(from, src_extent);
      const BufferRange dst = device->ResolveOrAddress(to, dst_extent);
      if (src.buffer != VK_NULL_HANDLE && dst.buffer != VK_NULL_HANDLE) {
        std::vector<VkBufferCopy> rows(r.rows);
        for (size_t i = 0; i < r.rows; ++i) rows[i] = {src.offset + i * r.src_pitch, dst.offset + i * r.dst_pitch, r.row_bytes};
        s.CopyBufferRegions(src.buffer, dst.buffer, rows);
      } else {
        for (size_t i = 0; i < r.rows; ++i)
          RecordAddressCopy(s, src.device_address + i * r.src_pitch, dst.device_address + i * r.dst_pitch,
                            r.row_bytes);
      }
      s.KeepAlive(r.src->buffer());
      s.KeepAlive(r.dst->buffer());
    });
  }
}

}  // namespace tessera::vulkan_ep
