// TilePipeline: a model run over a tensor too large for one run (an 8K x 8K image), tile by tile, with the uploads,
// the runs and the downloads of different tiles overlapped on three streams of the model's device.
//
//   tessera::TilePipelineOptions o;
//   o.tile_height = o.tile_width = 512;
//   o.halo = 16;                                     // >= the model's receptive-field radius for exact seams
//   tessera::TilePipeline pipeline(env, session, o);
//   tessera::Tensor out = pipeline.Run(image);       // image: host [N, C, H, W]; out: host [N, C', H', W']
//
// Tiling. The last two axes of the model's image input are cut into a grid of cores of tile_height x tile_width
// (the last row and column of cores may be smaller). Each tile's window is its core grown by `halo` on every side
// and shifted inward at the borders, so every window has the same shape, min(H, tile_height + 2 halo) x
// min(W, tile_width + 2 halo): a fixed-shape model serves every tile, and one CUDA graph replays for all of them.
// The image output's last two axes must be the window's scaled by a rational factor (1 for segmentation or
// denoising, 2 or 4 for super-resolution, 1/4 for a stride-4 head), the same for every tile; it is found from the
// first tile, and every core and window edge must map to a whole output pixel (the error names the edge).
// The other axes come from the model unchanged.
//
// Blending. kCrop takes each output pixel from the tile whose core holds it: the result equals one run over the
// whole image when the model's receptive-field radius is <= halo. kLinear weights every window's output with a ramp
// over the overlap (rising over 2 halo scaled pixels from each window edge) and divides by the sum of the weights:
// smooth seams for models whose outputs depend on more context than the halo. kLinear needs a float32 output.
//
// Pipeline, on a device whose EP has streams (CUDA, the simulated device): a ring of `ring_depth` slots, each with
// a host-accessible (pinned) input buffer, a device input, a device output and a pinned output buffer. Tile t uses
// slot t % ring_depth: the host copies its window into the slot's pinned input, the upload stream copies that to
// the device, the compute stream waits for the upload (an event) and runs the model (RunOptions::stream, no host
// wait), the download stream waits for the run and copies the output back. Two host threads share the work: the
// calling thread stages windows into free slots and queues their upload, run and download; a blender waits for each
// download in turn and blends that tile into the output, which frees the slot. Host waits are only for a slot's
// state (downloaded, free). Sessions without device streams (the CPU EP) run the tiles one after another.
//
// Not thread-safe: one Run at a time per pipeline. The session must outlive the pipeline; other threads may use the
// session meanwhile. Device buffers are allocated on the first Run and kept while the window shape stays the same.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tessera/environment.h"
#include "tessera/tensor.h"

namespace tessera {

class Session;

enum class TileBlend { kCrop, kLinear };

// Which work a Run does. kAll is the pipeline; the others exist to measure what overlap can at best achieve:
// kCopiesOnly stages, uploads, downloads and blends every tile without running the model (the output then holds
// whatever the device output buffers held), kComputeOnly runs the model on every tile's window already on the device
// (no host staging, no copies; the output is not written).
enum class TileStages { kAll, kCopiesOnly, kComputeOnly };

struct TilePipelineOptions {
  std::string input_name;   // the image input ("": the model's first input)
  std::string output_name;  // the image output ("": the model's first output)
  int64_t tile_height = 512, tile_width = 512;  // core size in input pixels
  int64_t halo = 0;                             // context added on each side of a core, in input pixels
  // Tiles in flight (>= 1). A tile passes five stages (staging, upload, run, download, blending), so a depth of 4
  // to 5 keeps every stage busy when copies and compute take about as long; 3 suffices when one clearly dominates.
  int ring_depth = 4;
  TileBlend blend = TileBlend::kCrop;
  // Threads that copy windows into the staging buffers, and as many that blend outputs (0: one per core). Host
  // copies run at 5-10 GB/s per thread against ~45 GB/s over PCIe: a single thread would bound the pipeline.
  int host_threads = 4;
  // Other model inputs, the same for every tile (bound once; host or device values).
  std::vector<std::pair<std::string, Value>> constant_inputs;
  // The baseline the pipeline is measured against: one tile at a time, the host waiting for each upload, run and
  // download before the next step (the same buffers and streams, no overlap).
  bool sequential = false;
  TileStages stages = TileStages::kAll;
  // A Chrome trace (chrome://tracing, Perfetto) of the last Run: one track for the issuing thread (staging, waits for
  // a free slot), one per stream (upload, compute, download) and one for the blender (waits, blending), device spans measured by polling the events of each step from a
  // tracing thread (about a microsecond of resolution; it costs a CPU core while the run lasts). "" = off.
  std::string trace_file;
};

// What the last Run did and where its time went.
struct TileRunStats {
  int64_t tiles = 0;
  int64_t window_height = 0, window_width = 0;  // every tile's input window
  int64_t input_bytes = 0, output_bytes = 0;    // moved over the link (all tiles, windows and whole outputs)
  double seconds = 0;         // the whole Run
  double stage_seconds = 0;   // host: copying windows into the pinned buffers
  double blend_seconds = 0;   // host: copying / blending outputs into the result
  double wait_seconds = 0;    // host: the issuing thread waiting for a free slot (sequential: for each step)
  bool on_device = false;     // false: the session has no device streams and tiles ran on the host one by one
  bool direct_upload = false;    // windows copied straight from the image (pinned or device memory), no staging
  bool direct_download = false;  // cores copied straight into the output (pinned or device memory), no blending
};

// One span of the trace: a step of one tile on one track ("host", "upload", "compute", "download", "blend").
struct TileTraceSpan {
  std::string track, name;
  int64_t tile = 0;
  double start_us = 0, end_us = 0;  // since the Run began
};

class TilePipeline {
 public:
  // Throws kInvalidArgument for an unknown input or output name, a rank below 2, non-positive tile sizes, a negative
  // halo or a ring depth below 1.
  TilePipeline(Environment& env, Session& session, TilePipelineOptions options);
  ~TilePipeline();
  TilePipeline(const TilePipeline&) = delete;
  TilePipeline& operator=(const TilePipeline&) = delete;

  // Runs the model over `image` (the model input's element type and rank, any size along the last two axes) and
  // returns the blended output in host memory. The image is in host-readable memory, or (on a device with streams
  // whose EP copies regions, Environment::CanCopyRegions) in the device's own memory.
  Tensor Run(const Tensor& image);
  // The same into a tensor the caller allocated with the output's type and shape (OutputShape): host-readable
  // memory, or with kCrop the device's own memory.
  //
  // Direct copies. An image in the device's pinned memory (EpDevice::host_accessible_memory, e.g. from
  // Environment::CreateSharedAllocator(device, MemoryType::kHostAccessible, ...)) or device memory is uploaded window
  // by window as 2-D regions (Environment::CopyTensorRegions) with no host copy into the ring's staging buffers; an
  // output there takes each tile's core straight from the download (kCrop), with no host blending copy. Pageable
  // images and outputs go through the ring's pinned buffers as described above. TileRunStats says which path ran.
  void Run(const Tensor& image, Tensor& output);
  // The output shape for an image shape (runs the first tile once when it is not known yet).
  Shape OutputShape(const Shape& image_shape);

  const TileRunStats& stats() const { return stats_; }
  // The spans of the last Run when trace_file is set (empty otherwise).
  const std::vector<TileTraceSpan>& trace() const { return trace_; }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  TileRunStats stats_;
  std::vector<TileTraceSpan> trace_;
};

}  // namespace tessera
