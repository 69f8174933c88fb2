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

}  // namespace tessera::testing_ep
