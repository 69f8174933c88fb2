// Shapes of the channel-inner layouts the ai.tessera Nchwc* kernels read and write (the nchwc_layout graph
// pass produces those nodes): a 2-D image batch NCHW is stored as the float tensor [N, C/B, H, W, B], element
// (n, c, h, w) at [n, c / B, h, w, c % B]. The channel block B is 8 or 16 (oneDNN's nChw8c / nChw16c), or all C
// channels in one block ([N, 1, H, W, C], which is NHWC); nodes name it by attribute channel_block = 8, 16 or 0.
// When C is not a multiple of an 8 or 16 block the last block is padded with channels that hold zeros (C/B
// rounds up): every producer keeps them zero (oneDNN zero-pads its outputs), and the graph pass only lets
// zero-preserving ops touch such tensors.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/ep/graph.h"
#include "tessera/status.h"
#include "tessera/tensor.h"

namespace tessera::cpu {

inline bool IsChannelBlock(int64_t block) { return block == 0 || block == 8 || block == 16; }

// The width of one block (the last dim) for `channels` channels.
inline int64_t BlockWidth(int64_t block, int64_t channels) { return block == 0 ? channels : block; }

inline int64_t ChannelBlocks(int64_t channels, int64_t width) { return (channels + width - 1) / width; }

// The NCHW shape a blocked tensor of shape `blocked` holds, with `channels` channels (< 0: all B * C/B of them);
// throws kInvalidArgument naming `node` and `what` unless it is [N, C/B, H, W, B] with B 8 or 16 (C/B fitting
// `channels`) or [N, 1, H, W, channels].
inline Shape PlainShapeOfBlocked(const Node& node, const char* what, const Shape& blocked, int64_t channels = -1) {
  const bool whole =
      blocked.rank() == 5 && blocked[1] == 1 && blocked[4] > 0 && (channels < 0 || channels == blocked[4]);
  const bool blocks = blocked.rank() == 5 && (blocked[4] == 8 || blocked[4] == 16) &&
                      (channels < 0 || ChannelBlocks(channels, blocked[4]) == blocked[1]);
  if (!whole && !blocks)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", what, " ", blocked.ToString(),
         " is not a blocked-channel tensor [N, C/B, H, W, B] with B 8, 16 or C",
         channels >= 0 ? " holding " + std::to_string(channels) + " channels" : std::string());
  return Shape{blocked[0], channels >= 0 ? channels : blocked[1] * blocked[4], blocked[2], blocked[3]};
}

// The shape of NCHW `plain` in the layout with channel block `block` (8, 16 or 0 = NHWC); throws
// kInvalidArgument naming `node` unless `plain` is 4-D.
inline Shape BlockedShapeOf(const Node& node, const Shape& plain, int64_t block) {
  if (plain.rank() != 4)
    Fail(ErrorCode::kInvalidArgument, node.Describe(), ": ", plain.ToString(),
         " cannot be stored in blocked channel layout: need NCHW");
  const int64_t width = BlockWidth(block, plain[1]);
  return Shape{plain[0], ChannelBlocks(plain[1], width), plain[2], plain[3], width};
}

}  // namespace tessera::cpu
