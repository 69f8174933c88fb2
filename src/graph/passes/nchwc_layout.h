// Keeps convolution activations in a channel-inner layout between consecutive convolutions (level all, after
// conv_activation_fusion), so oneDNN (CPU) or cuDNN (CUDA, NHWC) do not reorder NCHW <-> their layout around every
// conv. Each conv's EP picks the block (ExecutionProvider::PreferredChannelBlock). A blocked value is the tensor
// [N, C/B, H, W, B] (float; float16 too where the EP takes it) holding NCHW element (n, c, h, w) at [n, c / B, h, w, c % B]:
// B = 8 or 16 is oneDNN's nChw8c / nChw16c, and channel block 0 means one block of all C channels, i.e. NHWC
// ([N, 1, H, W, C]). Rewrites, in order:
//
//   Conv / FusedConv -> ai.tessera::NchwcConv(X, W, B?, Z?, channel_block): blocked Y; X stays plain unless
//       its producer is blocked. Needs float X, a constant 4-D W, Z (if any) blocked, and a dense or depthwise
//       conv (NHWC: with >= 8 output channels; 8/16 blocks: also grouped convs with whole blocks per group). With 8/16
//       blocks the output channels must be whole blocks, except that a dense conv may pad them with zero channels (at
//       most 1.5x, e.g. 24 -> 32). When Z's other readers are all ancestors of the conv (its last use), it gets
//       residual_in_place=1: Y may overwrite Z.
//   MaxPool (no Indices), AveragePool, GlobalMaxPool, GlobalAveragePool of a blocked X -> ai.tessera::Nchwc<op>.
//   Resize / Upsample of a blocked X over H and W (nearest or linear, constant scales [1, 1, sh, sw] or sizes
//       [N, C, H', W'], no `axes`, not tf_crop_and_resize) stays a Resize of the blocked tensor with 5-D scales
//       [1, 1, sh, sw, 1] or sizes (the feature-pyramid upsampling of YOLO-style detectors, before a Concat).
//   Ops exact on the blocked tensor itself stay as they are but read and write blocked values: unary
//       elementwise ops, Add/Sub/Mul/Div of two blocked values with the same channel count (broadcasting over
//       N, H, W is unchanged) or of a blocked value and a one-element constant, Concat of blocked values along
//       channels (axis becomes 1, or 4 for NHWC).
//   QuantizeLinear -> DequantizeLinear with per-tensor (one-element constant) parameters on an unpadded blocked
//       value (QDQ models' activation pairs): both stay blocked, the 8-bit value in between too.
//   Split of an unpadded blocked value along channels (YOLO's C2f / C3k2 blocks) into blocked parts: NHWC splits
//       axis 4 with the same sizes; with 8/16 blocks every part must be whole blocks and the sizes count blocks.
//
// Padded values only flow into convs, pools, zero-preserving unary ops and Add/Sub/Mul of two blocked values.
// Every other reader of a blocked value reads its plain twin, which keeps the original name and is made once
// by ai.tessera::ReorderFromBlocked: right before its first plain reader, or right after the producer when the
// value is a graph output or read by a subgraph (so graph outputs stay plain). Nodes are only rewritten into
// ai.tessera ops when the EP that would run them has those kernels (`can_fuse`).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "graph/passes/graph_rewrite.h"

namespace tessera {

// The channel block (8, 16, or 0 for NHWC) to run the convolution `conv` in; nullopt leaves it NCHW. Values
// flow blocked only between nodes of one block size.
using ChannelBlockFor = std::function<std::optional<int64_t>(const Node& conv, const Graph& graph)>;

// Returns the number of nodes now writing blocked values.
size_t ConvertToBlockedLayout(Graph& graph, const CanFuse& can_fuse, const ChannelBlockFor& channel_block);
// Every convolution in `channel_block` (8, 16 or 0).
size_t ConvertToBlockedLayout(Graph& graph, const CanFuse& can_fuse, int64_t channel_block);

}  // namespace tessera
