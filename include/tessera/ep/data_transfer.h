// Data transfer between memory spaces, provided by EPs and used by copy steps and CopyTensors.
#pragma once

#include <span>
#include <utility>

#include "tessera/device.h"
#include "tessera/stream.h"
#include "tessera/tensor.h"

namespace tessera {

struct CopyPair {
  const Tensor* src;
  Tensor* dst;  // already allocated with the same type and element count as src
};

class DataTransfer {
 public:
  virtual ~DataTransfer() = default;
  virtual bool CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const = 0;
  // Copies every pair. With a stream the copies are queued on it (and may still be running on
  // return) and the transfer keeps the tensors (their buffers) alive until they have completed; with
  // nullptr the call returns once the data has arrived.
  virtual void Copy(std::span<const CopyPair> pairs, Stream* stream) = 0;
};

}  // namespace tessera
