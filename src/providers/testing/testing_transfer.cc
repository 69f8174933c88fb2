#include "providers/testing/testing_transfer.h"

#include <cstring>
#include <vector>

#include "providers/testing/testing_memory.h"
#include "providers/testing/testing_stream.h"

namespace tessera::testing_ep {

namespace {

bool Reachable(const MemoryInfo& info) { return IsOwnMemory(info) || info.IsHostReadable(); }

// One resolved copy. The tensors are held so that their buffers outlive a queued copy.
struct PendingCopy {
  Tensor src;
  Tensor dst;
  const void* from;
  void* to;
  size_t bytes;
};

PendingCopy Resolve(const TestingDataTransfer& transfer, const CopyPair& pair) {
  const Tensor& src = *pair.src;
  Tensor& dst = *pair.dst;
  if (!transfer.CanCopy(src.memory_info(), dst.memory_info()))
    Fail(ErrorCode::kInvalidArgument, "testing device cannot copy ", src.Describe(), " to ", dst.Describe());
  if (src.type() == DataType::kString || dst.type() == DataType::kString)
    Fail(ErrorCode::kInvalidArgument, "testing device cannot hold string tensors (copy of ", src.Describe(), ")");
  if (src.type() != dst.type() || src.NumElements() != dst.NumElements())
    Fail(ErrorCode::kInvalidArgument, "copy from ", src.Describe(), " to ", dst.Describe(),
         ": type or element count differs");
  const size_t bytes = src.SizeInBytes();
  if (bytes == 0) return {src, dst, nullptr, nullptr, 0};
  return {src, dst, DeviceAccessibleData(src, "copy source"), DeviceAccessibleData(dst, "copy destination"), bytes};
}

}  // namespace

bool TestingDataTransfer::CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const {
  return (IsOwnMemory(src) || IsOwnMemory(dst)) && Reachable(src) && Reachable(dst);
}

void TestingDataTransfer::Copy(std::span<const CopyPair> pairs, Stream* stream) {
  std::vector<PendingCopy> copies;
  copies.reserve(pairs.size());
  for (const CopyPair& pair : pairs) copies.push_back(Resolve(*this, pair));
  RunOn(stream, [copies = std::move(copies)] {
    for (const PendingCopy& c : copies)
      if (c.bytes > 0) std::memcpy(c.to, c.from, c.bytes);
  });
}

void TestingDataTransfer::CopyRegions(std::span<const CopyRegion> regions, Stream* stream) {
  struct PendingRegion {
    Tensor src, dst;
    const uint8_t* from;
    uint8_t* to;
    CopyRegion shape;
  };
  std::vector<PendingRegion> pending;
  pending.reserve(regions.size());
  for (const CopyRegion& r : regions) {
    if (!CanCopy(r.src->memory_info(), r.dst->memory_info()))
      Fail(ErrorCode::kInvalidArgument, "testing device cannot copy regions of ", r.src->Describe(), " to ",
           r.dst->Describe());
    if (r.src->type() == DataType::kString || r.dst->type() == DataType::kString)
      Fail(ErrorCode::kInvalidArgument, "testing device cannot hold string tensors (regions of ", r.src->Describe(),
           ")");
    if (r.rows == 0 || r.row_bytes == 0) continue;
    pending.push_back({*r.src, *r.dst, static_cast<const uint8_t*>(DeviceAccessibleData(*r.src, "copy source")),
                       static_cast<uint8_t*>(DeviceAccessibleData(*r.dst, "copy destination")), r});
  }
  RunOn(stream, [pending = std::move(pending)] {
    for (const PendingRegion& p : pending)
      for (size_t row = 0; row < p.shape.rows; ++row)
        std::memcpy(p.to + p.shape.dst_offset + row * p.shape.dst_pitch,
                    p.from + p.shape.src_offset + row * p.shape.src_pitch, p.shape.row_bytes);
  });
}

}  // namespace tessera::testing_ep
