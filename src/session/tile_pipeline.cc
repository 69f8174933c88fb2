// TilePipeline (include/tessera/tile_pipeline.h): tiles, the ring of staging slots, and the trace.
#include "tessera/tile_pipeline.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "tessera/ep/thread_pool.h"
#include "tessera/session.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

// One axis of the tile grid: cores [core_begin, core_end) inside windows [window_begin, window_begin + window).
struct AxisTiles {
  int64_t length = 0, window = 0;
  std::vector<int64_t> core_begin, core_end, window_begin;
};

AxisTiles CutAxis(int64_t length, int64_t tile, int64_t halo) {
  AxisTiles a;
  a.length = length;
  a.window = std::min(length, tile + 2 * halo);
  for (int64_t c = 0; c < length; c += tile) {
    a.core_begin.push_back(c);
    a.core_end.push_back(std::min(c + tile, length));
    a.window_begin.push_back(std::clamp<int64_t>(c - halo, 0, length - a.window));
  }
  return a;
}

// A rational scale from window pixels to output pixels along one axis.
struct AxisScale {
  int64_t out = 1, in = 1;
  int64_t Map(int64_t x, const char* what, const char* axis) const {
    if ((x * out) % in != 0)
      Fail(ErrorCode::kInvalidArgument, "TilePipeline: the ", what, " at ", axis, " ", x,
           " does not map to a whole output pixel (output/window = ", out, "/", in,
           "); choose tile sizes and a halo that are multiples of ", in / std::gcd(out, in));
    return x * out / in;
  }
};

// Weight of output coordinate q of a window output of `length` pixels: a ramp over `ramp` pixels at each edge.
float Ramp(int64_t q, int64_t length, int64_t ramp) {
  const int64_t edge = std::min(q, length - 1 - q) + 1;
  return edge >= ramp ? 1.0f : static_cast<float>(edge) / static_cast<float>(ramp);
}

// The ring's slots as the two host threads of a pipelined Run see them: the calling thread stages a free slot's
// window and queues its upload, run and download; the blender waits for the download, blends and frees the slot.
// Every slot cycles kFree -> kQueued -> kFree and both threads handle tiles in order, so a state names one tile. The
// first error either thread reports (Fail) wakes the other: its Wait rethrows it. (A third thread for staging was
// measured slower on the H100 host: the issuing thread then lost its core to the copy threads and the GPU waited
// for launches; bench/results/gpu-2026-11-26-tile-pipeline/stager_thread_lease.log.)
class SlotRing {
 public:
  enum class State { kFree, kQueued };
  explicit SlotRing(size_t slots) : state_(slots, State::kFree) {}
  void Wait(size_t slot, State state) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return state_[slot] == state || error_; });
    if (error_) std::rethrow_exception(error_);
  }
  void Set(size_t slot, State state) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      state_[slot] = state;
    }
    changed_.notify_all();
  }
  void Fail(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = error;
    }
    changed_.notify_all();
  }
  std::exception_ptr error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<State> state_;
  std::exception_ptr error_;
};

// A host thread of the pipeline: runs `loop`, reporting an error to the ring instead of ending the process.
std::thread RingThread(SlotRing& ring, std::function<void()> loop) {
  return std::thread([&ring, loop = std::move(loop)] {
    try {
      loop();
    } catch (...) {
      ring.Fail(std::current_exception());
    }
  });
}

// Event-polling tracer: device spans of each step, reconstructed from when their events complete.
class Tracer {
 public:
  explicit Tracer(Clock::time_point origin) : origin_(origin) {
    poller_ = std::thread([this] { Poll(); });
  }
  ~Tracer() { Stop(); }

  double Now() const { return std::chrono::duration<double, std::micro>(Clock::now() - origin_).count(); }

  // A step queued on `track` at host time `issued`, after the step `after` (an index, -1: none) on another track;
  // `done` is recorded right behind it. Returns the step's index.
  int Device(const std::string& track, const std::string& name, int64_t tile, int after, std::unique_ptr<Event> done) {
    std::lock_guard<std::mutex> lock(mutex_);
    steps_.push_back({track, name, tile, Now(), after, std::move(done), -1.0});
    return static_cast<int>(steps_.size()) - 1;
  }
  // A span of host work on `track` ("host": the thread issuing tiles, "blend": the blending thread).
  void Host(const std::string& track, const std::string& name, int64_t tile, double start, double end) {
    std::lock_guard<std::mutex> lock(mutex_);
    host_.push_back({track, name, tile, start, end});
  }

  // Waits until every step has been seen complete, then builds the spans.
  std::vector<TileTraceSpan> Finish() {
    Stop();
    std::vector<TileTraceSpan> spans = host_;
    std::map<std::string, double> track_end;
    for (const Step& s : steps_) {  // in issue order: a step starts after its track's previous one and its dependency
      double start = std::max(s.issued, track_end[s.track]);
      if (s.after >= 0) start = std::max(start, steps_[static_cast<size_t>(s.after)].completed);
      const double end = std::max(start, s.completed);
      track_end[s.track] = end;
      spans.push_back({s.track, s.name, s.tile, start, end});
    }
    return spans;
  }

 private:
  struct Step {
    std::string track, name;
    int64_t tile;
    double issued;
    int after;
    std::unique_ptr<Event> done;
    double completed;
  };

  // Checks the open steps' events every few microseconds (not in a tight loop: queries take the driver's locks,
  // which the issuing thread needs too). Steps are appended only; the vector is read under the lock.
  void Poll() {
    size_t first_open = 0;
    std::vector<std::pair<size_t, Event*>> open;
    while (true) {
      const bool stopping = stop_.load();
      open.clear();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t i = first_open; i < steps_.size(); ++i)
          if (steps_[i].completed < 0) open.push_back({i, steps_[i].done.get()});
      }
      std::vector<std::pair<size_t, double>> reached;
      for (const auto& [i, event] : open)
        if (event->Query()) reached.push_back({i, Now()});
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [i, when] : reached) steps_[i].completed = when;
        while (first_open < steps_.size() && steps_[first_open].completed >= 0) ++first_open;
        if (stopping && first_open == steps_.size()) return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  void Stop() {
    if (!poller_.joinable()) return;
    stop_ = true;
    poller_.join();
  }

  Clock::time_point origin_;
  std::mutex mutex_;
  std::vector<Step> steps_;
  std::vector<TileTraceSpan> host_;
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

void WriteChromeTrace(const std::string& path, const std::vector<TileTraceSpan>& spans) {
  std::ofstream out(path);
  if (!out) Fail(ErrorCode::kIo, "TilePipeline: cannot write the trace '", path, "'");
  const std::vector<std::string> tracks = {"host", "upload", "compute", "download", "blend"};
  out << "{\"traceEvents\":[\n";
  for (size_t t = 0; t < tracks.size(); ++t)
    out << "{\"ph\":\"M\",\"pid\":1,\"tid\":" << t << ",\"name\":\"thread_name\",\"args\":{\"name\":\"" << tracks[t]
        << "\"}},\n";
  for (size_t i = 0; i < spans.size(); ++i) {
    const TileTraceSpan& s = spans[i];
    const size_t tid = static_cast<size_t>(std::find(tracks.begin(), tracks.end(), s.track) - tracks.begin());
    out << "{\"ph\":\"X\",\"pid\":1,\"tid\":" << tid << ",\"name\":\"" << s.name << "\",\"ts\":" << s.start_us
        << ",\"dur\":" << (s.end_us - s.start_us) << ",\"args\":{\"tile\":" << s.tile << "}}"
        << (i + 1 < spans.size() ? ",\n" : "\n");
  }
  out << "]}\n";
  if (!out) Fail(ErrorCode::kIo, "TilePipeline: writing the trace '", path, "' failed");
}

}  // namespace

struct TilePipeline::Impl {
  Environment& env;
  Session& session;
  TilePipelineOptions options;
  ThreadPool host_threads;
  std::string input, output;
  DataType input_type = DataType::kUndefined;
  size_t input_rank = 0;

  // Device side (absent when the input is read from host memory by a session without streams).
  const EpDevice* device = nullptr;
  std::unique_ptr<Stream> upload, compute, download;
  AllocatorPtr device_memory, staging_memory;

  // Per window shape: the probe's output and the ring.
  Shape window_shape, tile_output_shape;
  DataType output_type = DataType::kUndefined;
  struct Slot {
    Tensor staged_in, device_in, device_out, staged_out;
    std::unique_ptr<Event> uploaded, computed, downloaded;
    std::optional<IoBinding> binding;
  };
  std::vector<Slot> ring;

  Impl(Environment& e, Session& s, TilePipelineOptions o)
      : env(e), session(s), options(std::move(o)), host_threads(options.host_threads) {}

  bool streams() const { return compute != nullptr; }
  // Whether tiles may be copied straight from / into a tensor in `memory`: the model's device has streams and the
  // memory is its pinned (host-accessible) or its own device memory.
  bool DirectMemory(const MemoryInfo& memory) const {
    return streams() && device != nullptr &&
           (memory == device->device_memory ||
            (device->host_accessible_memory && memory == *device->host_accessible_memory));
  }
  void Prepare(const Shape& image_shape);
  void Probe(const Tensor& window);
  void CopyWindow(const Tensor& image, int64_t y0, int64_t x0, Tensor& window) const;
};

TilePipeline::TilePipeline(Environment& env, Session& session, TilePipelineOptions options)
    : impl_(std::make_unique<Impl>(env, session, std::move(options))) {
  Impl& m = *impl_;
  const TilePipelineOptions& o = m.options;
  if (o.tile_height <= 0 || o.tile_width <= 0)
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: tile sizes must be positive, got ", o.tile_height, "x",
         o.tile_width);
  if (o.halo < 0) Fail(ErrorCode::kInvalidArgument, "TilePipeline: halo must be >= 0, got ", o.halo);
  if (o.ring_depth < 1) Fail(ErrorCode::kInvalidArgument, "TilePipeline: ring_depth must be >= 1, got ", o.ring_depth);
  const auto pick = [](const std::vector<ValueInfo>& infos, const std::string& name, const char* what) {
    if (infos.empty()) Fail(ErrorCode::kInvalidArgument, "TilePipeline: the model has no ", what);
    if (name.empty()) return infos.front();
    for (const ValueInfo& v : infos)
      if (v.name == name) return v;
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: the model has no ", what, " '", name, "'");
  };
  const ValueInfo in = pick(session.inputs(), o.input_name, "input");
  const ValueInfo out = pick(session.outputs(), o.output_name, "output");
  m.input = in.name;
  m.output = out.name;
  m.input_type = in.type;
  if (in.shape) {
    m.input_rank = in.shape->size();
    if (m.input_rank < 2)
      Fail(ErrorCode::kInvalidArgument, "TilePipeline: input '", in.name, "' has rank ", m.input_rank,
           "; tiles cut the last two axes");
  }
  if (o.blend == TileBlend::kLinear && out.type != DataType::kUndefined && out.type != DataType::kFloat)
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: linear blending needs a float32 output; '", out.name, "' is ",
         DataTypeName(out.type));
  m.device = session.InputEpDevice(m.input);
  const MemoryInfo where = session.InputMemoryInfo(m.input);
  if (m.device != nullptr && !where.IsHostReadable()) {
    m.upload = env.CreateStream(*m.device);
    m.compute = env.CreateStream(*m.device);
    m.download = env.CreateStream(*m.device);
    m.device_memory = m.device->factory->CreateAllocator(m.device->device_memory);
    if (m.device->host_accessible_memory) m.staging_memory = m.device->factory->CreateAllocator(*m.device->host_accessible_memory);
    if (m.device_memory == nullptr)
      Fail(ErrorCode::kInvalidArgument, "TilePipeline: ", m.device->ep_name, " cannot allocate ", where.ToString());
  }
  if (m.staging_memory == nullptr) m.staging_memory = CreateHostAllocator();
  if (m.compute == nullptr) {  // no streams: synchronous copies (or none) and runs
    m.upload.reset();
    m.download.reset();
  }
}

TilePipeline::~TilePipeline() {
  Impl& m = *impl_;
  try {
    for (Stream* s : {m.upload.get(), m.compute.get(), m.download.get()})
      if (s != nullptr) s->Synchronize();
  } catch (...) {  // errors of the last run were reported by it
  }
}

void TilePipeline::Impl::CopyWindow(const Tensor& image, int64_t y0, int64_t x0, Tensor& window) const {
  const Shape& is = image.shape();
  const size_t rank = is.rank();
  const int64_t height = is[rank - 2], width = is[rank - 1];
  const int64_t wh = window.shape()[rank - 2], ww = window.shape()[rank - 1];
  const int64_t planes = window.NumElements() / (wh * ww);
  const size_t es = SizeOf(image.type());
  const auto* src = static_cast<const uint8_t*>(image.raw_data());
  auto* dst = static_cast<uint8_t*>(window.raw_data());
  host_threads.ParallelFor(planes * wh, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t p = r / wh, y = r % wh;
      std::memcpy(dst + static_cast<size_t>(r * ww) * es,
                  src + static_cast<size_t>((p * height + y0 + y) * width + x0) * es, static_cast<size_t>(ww) * es);
    }
  });
}

// Runs the first window once: the output's type and shape per tile, and the session's first-run costs (algorithm
// choices, graph warm-up) paid before the timed tiles.
void TilePipeline::Impl::Probe(const Tensor& window) {
  std::vector<std::pair<std::string, Value>> feeds = options.constant_inputs;
  feeds.push_back({input, Value(window)});
  std::vector<Value> outs = session.Run(feeds, {output});
  if (!outs[0].is_tensor()) Fail(ErrorCode::kInvalidArgument, "TilePipeline: output '", output, "' is not a tensor");
  const Tensor& t = outs[0].tensor();
  if (t.shape().rank() < 2)
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: output '", output, "' has rank ", t.shape().rank(),
         "; it must be a map over the window's last two axes");
  if (options.blend == TileBlend::kLinear && t.type() != DataType::kFloat)
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: linear blending needs a float32 output; '", output, "' is ",
         DataTypeName(t.type()));
  tile_output_shape = t.shape();
  output_type = t.type();
}

void TilePipeline::Impl::Prepare(const Shape& image_shape) {
  const size_t rank = image_shape.rank();
  if (rank < 2 || (input_rank != 0 && rank != input_rank))
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: the image for input '", input, "' has shape ",
         image_shape.ToString(), "; the model takes rank ", input_rank);
  std::vector<int64_t> dims(image_shape.dims().begin(), image_shape.dims().end());
  dims[rank - 2] = std::min(image_shape[rank - 2], options.tile_height + 2 * options.halo);
  dims[rank - 1] = std::min(image_shape[rank - 1], options.tile_width + 2 * options.halo);
  const Shape shape(dims);
  if (shape == window_shape && output_type != DataType::kUndefined) return;
  for (Stream* s : {upload.get(), compute.get(), download.get()})
    if (s != nullptr) s->Synchronize();
  ring.clear();
  window_shape = shape;
  output_type = DataType::kUndefined;
  Tensor zeros = Tensor::Allocate(input_type == DataType::kUndefined ? DataType::kFloat : input_type, window_shape);
  std::memset(zeros.raw_data(), 0, zeros.SizeInBytes());
  Probe(zeros);
  if (!streams()) return;
  const int depth = options.sequential ? 1 : options.ring_depth;
  for (int i = 0; i < depth; ++i) {
    Slot slot;
    slot.staged_in = Tensor::Allocate(zeros.type(), window_shape, staging_memory);
    slot.device_in = Tensor::Allocate(zeros.type(), window_shape, device_memory);
    slot.device_out = Tensor::Allocate(output_type, tile_output_shape, device_memory);
    slot.staged_out = Tensor::Allocate(output_type, tile_output_shape, staging_memory);
    std::memset(slot.staged_in.raw_data(), 0, slot.staged_in.SizeInBytes());
    env.CopyTensors({&slot.staged_in, 1}, {&slot.device_in, 1}, nullptr);  // defined contents for kComputeOnly
    slot.uploaded = upload->CreateEvent();
    slot.computed = compute->CreateEvent();
    slot.downloaded = download->CreateEvent();
    slot.binding.emplace(session.CreateIoBinding());
    for (const auto& [name, value] : options.constant_inputs) slot.binding->BindInput(name, value);
    slot.binding->BindInput(input, Value(slot.device_in));
    slot.binding->BindOutput(output, Value(slot.device_out));
    ring.push_back(std::move(slot));
  }
}

Shape TilePipeline::OutputShape(const Shape& image_shape) {
  Impl& m = *impl_;
  m.Prepare(image_shape);
  const size_t rank = image_shape.rank(), out_rank = m.tile_output_shape.rank();
  const AxisScale sy{m.tile_output_shape[out_rank - 2], m.window_shape[rank - 2]};
  const AxisScale sx{m.tile_output_shape[out_rank - 1], m.window_shape[rank - 1]};
  std::vector<int64_t> dims(m.tile_output_shape.dims().begin(), m.tile_output_shape.dims().end());
  dims[out_rank - 2] = sy.Map(image_shape[rank - 2], "image height", "row");
  dims[out_rank - 1] = sx.Map(image_shape[rank - 1], "image width", "column");
  return Shape(dims);
}

Tensor TilePipeline::Run(const Tensor& image) {
  const Shape shape = OutputShape(image.shape());
  Tensor output = Tensor::Allocate(impl_->output_type, shape);
  Run(image, output);
  return output;
}

void TilePipeline::Run(const Tensor& image, Tensor& output) {
  Impl& m = *impl_;
  const TilePipelineOptions& o = m.options;
  // Direct copies: an image (an output) in the device's pinned or device memory is copied to (from) the device as
  // 2-D regions on the upload (download) stream, with no staging (blending) copy on the host.
  const bool copies = o.stages != TileStages::kComputeOnly;
  const bool direct_in = copies && m.DirectMemory(image.memory_info()) &&
                         m.env.CanCopyRegions(image.memory_info(), m.device->device_memory);
  if (!image.memory_info().IsHostReadable() && !direct_in)
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: the image must be in host-readable memory or in the memory of ",
         m.device != nullptr ? m.device->ep_name : std::string("the model's device"), " when it copies regions, got ",
         image.Describe());
  if (m.input_type != DataType::kUndefined && image.type() != m.input_type)
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: input '", m.input, "' takes ", DataTypeName(m.input_type),
         ", the image is ", DataTypeName(image.type()));
  const Shape out_shape = OutputShape(image.shape());
  const bool direct_out = copies && o.blend == TileBlend::kCrop && m.DirectMemory(output.memory_info()) &&
                          m.env.CanCopyRegions(m.device->device_memory, output.memory_info());
  if ((!output.memory_info().IsHostReadable() && !direct_out) || output.type() != m.output_type ||
      output.shape() != out_shape)
    Fail(ErrorCode::kInvalidArgument, "TilePipeline: the output must be a ", DataTypeName(m.output_type),
         out_shape.ToString(), " tensor in host-readable memory (or, with kCrop, the device's memory), got ",
         output.Describe());

  const size_t rank = image.shape().rank(), out_rank = out_shape.rank();
  const AxisTiles ty = CutAxis(image.shape()[rank - 2], o.tile_height, o.halo);
  const AxisTiles tx = CutAxis(image.shape()[rank - 1], o.tile_width, o.halo);
  const AxisScale sy{m.tile_output_shape[out_rank - 2], ty.window}, sx{m.tile_output_shape[out_rank - 1], tx.window};
  // Every edge a tile uses, mapped to output pixels up front, so that a bad scale fails before any work.
  struct TileEdges {
    int64_t in_y, in_x;               // window origin in the image
    int64_t out_y, out_x;             // window origin in the output
    int64_t core_y0, core_y1, core_x0, core_x1;  // core in output pixels
  };
  std::vector<TileEdges> tiles;
  for (size_t i = 0; i < ty.core_begin.size(); ++i)
    for (size_t j = 0; j < tx.core_begin.size(); ++j)
      tiles.push_back({ty.window_begin[i], tx.window_begin[j], sy.Map(ty.window_begin[i], "window edge", "row"),
                       sx.Map(tx.window_begin[j], "window edge", "column"), sy.Map(ty.core_begin[i], "core edge", "row"),
                       sy.Map(ty.core_end[i], "core edge", "row"), sx.Map(tx.core_begin[j], "core edge", "column"),
                       sx.Map(tx.core_end[j], "core edge", "column")});
  const int64_t oh = m.tile_output_shape[out_rank - 2], ow = m.tile_output_shape[out_rank - 1];
  const int64_t out_height = out_shape[out_rank - 2], out_width = out_shape[out_rank - 1];
  const int64_t planes = m.tile_output_shape.NumElements() / (oh * ow);
  const size_t es = SizeOf(m.output_type);

  const Clock::time_point begin = Clock::now();
  stats_ = TileRunStats{};
  stats_.tiles = static_cast<int64_t>(tiles.size());
  stats_.window_height = ty.window;
  stats_.window_width = tx.window;
  stats_.on_device = m.streams();
  stats_.direct_upload = direct_in;
  stats_.direct_download = direct_out;
  trace_.clear();
  std::optional<Tracer> tracer;
  if (!o.trace_file.empty()) tracer.emplace(begin);
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };

  // Linear blending accumulates into the output (float) and a weight plane.
  std::vector<float> weight_sum;
  const bool linear = o.blend == TileBlend::kLinear;
  if (linear) {
    std::fill_n(output.Data<float>(), output.NumElements(), 0.0f);
    weight_sum.assign(static_cast<size_t>(out_height * out_width), 0.0f);
  }
  const int64_t ramp_y = std::max<int64_t>(1, std::min(2 * o.halo * sy.out / sy.in, oh));
  const int64_t ramp_x = std::max<int64_t>(1, std::min(2 * o.halo * sx.out / sx.in, ow));
  const auto blend = [&](int64_t index, const Tensor& tile_out, const char* track) {
    const Clock::time_point t0 = Clock::now();
    const double trace_start = tracer ? tracer->Now() : 0;
    const TileEdges& e = tiles[static_cast<size_t>(index)];
    const auto* src = static_cast<const uint8_t*>(tile_out.raw_data());
    auto* dst = static_cast<uint8_t*>(output.raw_data());
    if (!linear) {
      const int64_t rows = e.core_y1 - e.core_y0, cols = e.core_x1 - e.core_x0;
      m.host_threads.ParallelFor(planes * rows, 64, [&](int64_t b, int64_t end) {
        for (int64_t r = b; r < end; ++r) {
          const int64_t p = r / rows, y = e.core_y0 + r % rows;
          std::memcpy(dst + static_cast<size_t>((p * out_height + y) * out_width + e.core_x0) * es,
                      src + static_cast<size_t>((p * oh + (y - e.out_y)) * ow + (e.core_x0 - e.out_x)) * es,
                      static_cast<size_t>(cols) * es);
        }
      });
    } else {
      const float* in = tile_out.Data<float>();
      float* acc = output.Data<float>();
      m.host_threads.ParallelFor(oh, 16, [&](int64_t b, int64_t end) {  // rows: weight_sum rows are disjoint
        for (int64_t y = b; y < end; ++y) {
          const float wy = Ramp(y, oh, ramp_y);
          for (int64_t x = 0; x < ow; ++x) {
            const float w = wy * Ramp(x, ow, ramp_x);
            weight_sum[static_cast<size_t>((e.out_y + y) * out_width + e.out_x + x)] += w;
            for (int64_t p = 0; p < planes; ++p)
              acc[(p * out_height + e.out_y + y) * out_width + e.out_x + x] += w * in[(p * oh + y) * ow + x];
          }
        }
      });
    }
    stats_.blend_seconds += seconds_since(t0);
    if (tracer) tracer->Host(track, "blend", index, trace_start, tracer->Now());
  };
  const auto stage = [&](int64_t index, Tensor& window) {
    const Clock::time_point t0 = Clock::now();
    const double trace_start = tracer ? tracer->Now() : 0;
    m.CopyWindow(image, tiles[static_cast<size_t>(index)].in_y, tiles[static_cast<size_t>(index)].in_x, window);
    stats_.stage_seconds += seconds_since(t0);
    if (tracer) tracer->Host("host", "stage", index, trace_start, tracer->Now());
  };

  // A tile's window of the image, plane by plane, into a window-shaped tensor (its slot's device input).
  const auto window_regions = [&](int64_t index, Tensor& window) {
    const TileEdges& e = tiles[static_cast<size_t>(index)];
    const int64_t height = image.shape()[rank - 2], width = image.shape()[rank - 1];
    const int64_t wh = m.window_shape[rank - 2], ww = m.window_shape[rank - 1];
    const size_t in_es = SizeOf(image.type());
    std::vector<CopyRegion> regions;
    for (int64_t p = 0; p < window.NumElements() / (wh * ww); ++p)
      regions.push_back({&image, &window, static_cast<size_t>((p * height + e.in_y) * width + e.in_x) * in_es,
                         static_cast<size_t>(width) * in_es, static_cast<size_t>(p * wh * ww) * in_es,
                         static_cast<size_t>(ww) * in_es, static_cast<size_t>(ww) * in_es, static_cast<size_t>(wh)});
    return regions;
  };
  // A tile output's core, plane by plane, into its place in the output (what kCrop's blend copies on the host).
  const auto core_regions = [&](int64_t index, const Tensor& tile_out) {
    const TileEdges& e = tiles[static_cast<size_t>(index)];
    const int64_t rows = e.core_y1 - e.core_y0, cols = e.core_x1 - e.core_x0;
    std::vector<CopyRegion> regions;
    for (int64_t p = 0; p < planes; ++p)
      regions.push_back({&tile_out, &output,
                         static_cast<size_t>((p * oh + (e.core_y0 - e.out_y)) * ow + (e.core_x0 - e.out_x)) * es,
                         static_cast<size_t>(ow) * es,
                         static_cast<size_t>((p * out_height + e.core_y0) * out_width + e.core_x0) * es,
                         static_cast<size_t>(out_width) * es, static_cast<size_t>(cols) * es,
                         static_cast<size_t>(rows)});
    return regions;
  };

  const int64_t count = static_cast<int64_t>(tiles.size());
  const int64_t window_bytes = m.window_shape.NumElements() * static_cast<int64_t>(SizeOf(image.type()));
  const int64_t tile_out_bytes = m.tile_output_shape.NumElements() * static_cast<int64_t>(es);
  if (!m.streams()) {  // host or synchronous device: one tile after another
    const AllocatorPtr host = CreateHostAllocator();
    Tensor window = Tensor::Allocate(image.type(), m.window_shape, host);
    for (int64_t t = 0; t < count; ++t) {
      stage(t, window);
      std::vector<std::pair<std::string, Value>> feeds = o.constant_inputs;
      feeds.push_back({m.input, Value(window)});
      if (o.stages == TileStages::kCopiesOnly) {
        blend(t, Tensor::Allocate(m.output_type, m.tile_output_shape, host), "host");
        continue;
      }
      std::vector<Value> outs = m.session.Run(feeds, {m.output});
      if (outs[0].tensor().shape() != m.tile_output_shape)
        Fail(ErrorCode::kInvalidArgument, "TilePipeline: tile ", t, " produced ", outs[0].tensor().Describe(),
             ", the first tile ", m.tile_output_shape.ToString(), "; the output must have the same shape per tile");
      if (o.stages == TileStages::kAll) blend(t, outs[0].tensor(), "host");
    }
  } else {
    const int depth = static_cast<int>(m.ring.size());
    const bool runs = o.stages != TileStages::kCopiesOnly;
    RunOptions run_options;
    run_options.stream = m.compute.get();
    run_options.synchronize = false;
    // Waits for a tile's download and blends it (the blender thread, or this one in the sequential baseline).
    const auto finish_tile = [&](int64_t t, Impl::Slot& slot, const char* track) {
      const double trace_start = tracer ? tracer->Now() : 0;
      slot.downloaded->Synchronize();
      if (tracer) tracer->Host(track, "wait", t, trace_start, tracer->Now());
      if (!direct_out) blend(t, slot.staged_out, track);  // direct: the download put the core in place
    };
    // Pipelined with copies: a blender thread beside this one (SlotRing). Sequential or compute only: everything on
    // this thread.
    const bool threaded = copies && !o.sequential;
    SlotRing ring(static_cast<size_t>(depth));
    std::vector<std::thread> helpers;
    using State = SlotRing::State;
    if (threaded) {
      helpers.push_back(RingThread(ring, [&] {
        for (int64_t t = 0; t < count; ++t) {
          const size_t s = static_cast<size_t>(t % depth);
          ring.Wait(s, State::kQueued);
          finish_tile(t, m.ring[s], "blend");
          ring.Set(s, State::kFree);
        }
      }));
    }
    const auto join_helpers = [&] {
      for (std::thread& helper : helpers) helper.join();
      helpers.clear();
    };
    try {
      for (int64_t t = 0; t < count; ++t) {
        const size_t s = static_cast<size_t>(t % depth);
        Impl::Slot& slot = m.ring[s];
        if (copies) {
          if (threaded) {
            const Clock::time_point t0 = Clock::now();
            const double trace_start = tracer ? tracer->Now() : 0;
            ring.Wait(s, State::kFree);
            stats_.wait_seconds += seconds_since(t0);
            if (tracer) tracer->Host("host", "wait", t, trace_start, tracer->Now());
          }
          if (direct_in) {
            m.env.CopyTensorRegions(window_regions(t, slot.device_in), m.upload.get());
          } else {
            stage(t, slot.staged_in);
            m.env.CopyTensors({&slot.staged_in, 1}, {&slot.device_in, 1}, m.upload.get());
          }
          slot.uploaded->Record(*m.upload);
        }
        int upload_step = -1;
        if (tracer && copies) {
          auto done = m.upload->CreateEvent();
          done->Record(*m.upload);
          upload_step = tracer->Device("upload", "upload", t, -1, std::move(done));
        }
        int compute_step = -1;
        if (runs) {
          if (copies) slot.uploaded->Wait(*m.compute);
          m.session.Run(*slot.binding, run_options);
          if (tracer) {
            auto done = m.compute->CreateEvent();
            done->Record(*m.compute);
            compute_step = tracer->Device("compute", "run", t, upload_step, std::move(done));
          }
        }
        if (copies) {
          if (runs) {
            slot.computed->Record(*m.compute);
            slot.computed->Wait(*m.download);
          } else {  // copies only: the download must still follow the upload, or the slot comes back while its
            slot.uploaded->Wait(*m.download);  // pinned input is being read
          }
          if (direct_out) m.env.CopyTensorRegions(core_regions(t, slot.device_out), m.download.get());
          else m.env.CopyTensors({&slot.device_out, 1}, {&slot.staged_out, 1}, m.download.get());
          slot.downloaded->Record(*m.download);
          if (tracer) {
            auto done = m.download->CreateEvent();
            done->Record(*m.download);
            tracer->Device("download", "download", t, runs ? compute_step : upload_step, std::move(done));
          }
          if (threaded) ring.Set(s, State::kQueued);
        }
        if (o.sequential) {  // the baseline: every step waited for before the next
          const Clock::time_point t0 = Clock::now();
          m.compute->Synchronize();
          if (copies) m.download->Synchronize();
          stats_.wait_seconds += seconds_since(t0);
          if (copies) finish_tile(t, slot, "host");
        }
      }
      join_helpers();
      if (std::exception_ptr error = ring.error()) std::rethrow_exception(error);
    } catch (...) {
      ring.Fail(std::current_exception());  // wakes the helpers; the first error wins
      join_helpers();
      for (Stream* stream : {m.upload.get(), m.compute.get(), m.download.get()}) stream->Synchronize();
      m.session.Synchronize();  // what a failed run queued before it failed
      throw;
    }
    m.compute->Synchronize();
  }
  if (linear) {
    float* acc = output.Data<float>();
    m.host_threads.ParallelFor(out_height, 16, [&](int64_t b, int64_t end) {
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t y = b; y < end; ++y)
          for (int64_t x = 0; x < out_width; ++x)
            acc[(p * out_height + y) * out_width + x] /= weight_sum[static_cast<size_t>(y * out_width + x)];
    });
  }
  stats_.seconds = seconds_since(begin);
  stats_.input_bytes = o.stages == TileStages::kComputeOnly ? 0 : count * window_bytes;
  stats_.output_bytes = o.stages == TileStages::kComputeOnly ? 0 : count * tile_out_bytes;
  if (tracer) {
    trace_ = tracer->Finish();
    WriteChromeTrace(o.trace_file, trace_);
  }
}

}  // namespace tessera
