#include "session/host_copies.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tessera {

void CopyHostBuffers(const ThreadPool& pool, std::span<const HostCopy> copies) {
  size_t total = 0;
  for (const HostCopy& c : copies) total += c.bytes;
  if (total < kParallelHostCopyBytes || pool.num_threads() <= 1) {
    for (const HostCopy& c : copies)
      if (c.bytes > 0) std::memcpy(c.dst, c.src, c.bytes);
    return;
  }
  std::vector<HostCopy> pieces;
  pieces.reserve(total / kHostCopyPiece + copies.size());
  for (const HostCopy& c : copies)
    for (size_t at = 0; at < c.bytes; at += kHostCopyPiece)
      pieces.push_back({static_cast<char*>(c.dst) + at, static_cast<const char*>(c.src) + at,
                        std::min(kHostCopyPiece, c.bytes - at)});
  pool.ParallelFor(static_cast<int64_t>(pieces.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) std::memcpy(pieces[i].dst, pieces[i].src, pieces[i].bytes);
  });
}

}  // namespace tessera
