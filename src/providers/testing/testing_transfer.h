// Copies between the simulated device's memory and host-readable memory (host <-> device,
// device <-> device, host-accessible <-> device). With a testing stream the copies are queued on it;
// with no stream they are done before Copy returns.
#pragma once

#include "tessera/ep/data_transfer.h"

namespace tessera::testing_ep {

class TestingDataTransfer : public DataTransfer {
 public:
  // True when one side is this device's memory and the other is too or is host-readable.
  bool CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const override;
  // Throws kInvalidArgument for a pair CanCopy rejects, mismatched sizes, string tensors, or a stream
  // of another device. The tensors' buffers are kept alive until the queued copy has run.
  void Copy(std::span<const CopyPair> pairs, Stream* stream) override;
  // The pairs CanCopy takes; rows copied one by one on the stream's worker as Copy's copies are.
  bool CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const override { return CanCopy(src, dst); }
  void CopyRegions(std::span<const CopyRegion> regions, Stream* stream) override;
};

}  // namespace tessera::testing_ep
