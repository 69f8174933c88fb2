// HostStagedTransfer: a copy between two memories that no EP copies between directly (a simulated NPU's memory and
// a GPU's, two vendors' GPUs), made of two copies through host memory: the transfer that copies src -> host, then
// the one that copies host -> dst. The session builds one per such pair of memories when a plan or a feed needs it.
//
// The copies are synchronous: with a stream, Copy first waits for the work queued on it (the sources' producers),
// then copies; with none it expects the sources to be complete, as every synchronous DataTransfer does.
#pragma once

#include "tessera/allocator.h"
#include "tessera/ep/data_transfer.h"

namespace tessera {

class HostStagedTransfer : public DataTransfer {
 public:
  // `to_host` copies src -> host memory and `from_host` host memory -> dst; `host` allocates the staging tensors.
  HostStagedTransfer(MemoryInfo src, MemoryInfo dst, DataTransfer* to_host, DataTransfer* from_host, AllocatorPtr host);
  // True for the one pair of memories it was made for.
  bool CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const override;
  void Copy(std::span<const CopyPair> pairs, Stream* stream) override;

 private:
  MemoryInfo src_, dst_;
  DataTransfer* to_host_;
  DataTransfer* from_host_;
  AllocatorPtr host_;
};

}  // namespace tessera
