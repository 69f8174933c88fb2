// CopyHostBuffers: every byte of every copy lands where it should, for sets below the parallel threshold (copied on
// the caller) and above it (pieces spread over the pool), with copies of every size around a piece's.
#include "session/host_copies.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tessera::test {
namespace {

void ExpectCopied(const std::vector<size_t>& sizes, int threads) {
  std::vector<std::vector<uint8_t>> sources, targets;
  std::vector<HostCopy> copies;
  uint32_t state = 12345;
  for (size_t bytes : sizes) {
    std::vector<uint8_t> src(bytes);
    for (uint8_t& b : src) b = static_cast<uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
    sources.push_back(std::move(src));
    targets.emplace_back(bytes, 0);
  }
  for (size_t i = 0; i < sizes.size(); ++i) copies.push_back({targets[i].data(), sources[i].data(), sizes[i]});
  CopyHostBuffers(ThreadPool(threads), copies);
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(targets[i], sources[i]) << "copy " << i << " of " << sizes[i] << " bytes";
}

TEST(HostCopiesTest, SmallSetsOnTheCaller) {
  ExpectCopied({0, 1, 7, 4096, 100000}, 2);
}

TEST(HostCopiesTest, LargeSetsInPiecesOnThePool) {
  const size_t piece = kHostCopyPiece;
  for (int threads : {1, 2, 3})
    ExpectCopied({0, 1, piece - 1, piece, piece + 1, 3 * piece + 5, 24 * 49152, kParallelHostCopyBytes}, threads);
}

}  // namespace
}  // namespace tessera::test
