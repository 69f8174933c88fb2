// A PNG picture of a TilePipeline trace: one row per track (host, upload, compute, download,
// blend), one bar per span,
// colored by tile, with a millisecond scale. Self-contained (stored deflate blocks, no zlib).
#pragma once

#include <string>
#include <vector>

#include "tessera/tile_pipeline.h"

namespace tessera::bench {

// Writes `spans` to `path` (width in pixels); throws std::runtime_error when the file cannot be written.
void WriteTimelinePng(const std::string& path, const std::vector<TileTraceSpan>& spans, const std::string& title,
                      int width = 1600);

}  // namespace tessera::bench
