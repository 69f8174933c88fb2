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

// A 2-D region of bytes copied from src into dst: `rows` rows of `row_bytes` bytes, the first at byte `src_offset`
// of src's buffer (`dst_offset` of dst's) and each next one `src_pitch` (`dst_pitch`) bytes after the one before --
// a window of an image, or a tile's core written into its place in a larger output. Both tensors may have any
// type and shape; only their buffers' bytes count.
struct CopyRegion {
  const Tensor* src = nullptr;
  Tensor* dst = nullptr;
  size_t src_offset = 0, src_pitch = 0;
  size_t dst_offset = 0, dst_pitch = 0;
  size_t row_bytes = 0, rows = 0;
};

class DataTransfer {
 public:
  virtual ~DataTransfer() = default;
  virtual bool CanCopy(const MemoryInfo& src, const MemoryInfo& dst) const = 0;
  // Copies every pair. With a stream the copies are queued on it (and may still be running on
  // return) and the transfer keeps the tensors (their buffers) alive until they have completed; with
  // nullptr the call returns once the data has arrived.
  virtual void Copy(std::span<const CopyPair> pairs, Stream* stream) = 0;

  // Whether CopyRegions takes regions between these memories (default: no transfer does). A caller that gets false
  // copies through a dense buffer instead.
  virtual bool CanCopyRegions(const MemoryInfo& src, const MemoryInfo& dst) const {
    (void)src;
    (void)dst;
    return false;
  }
  // Copies every region, on `stream` as Copy does (queued, the tensors kept alive until done; nullptr: done on
  // return). Regions are checked against their buffers' sizes by the caller (Environment::CopyTensorRegions).
  virtual void CopyRegions(std::span<const CopyRegion> regions, Stream* stream) {
    (void)stream;
    if (!regions.empty())
      Fail(ErrorCode::kNotImplemented, "this EP's data transfer does not copy regions (",
           regions.front().src->memory_info().ToString(), " -> ", regions.front().dst->memory_info().ToString(), ")");
  }
};

}  // namespace tessera
