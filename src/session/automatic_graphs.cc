#include "session/automatic_graphs.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/logging.h"
#include "exec/executor.h"
#include "exec/run_observer.h"
#include "session/graph_capture_check.h"
#include "session/host_copies.h"
#include "tessera/status.h"

namespace tessera {

namespace {

constexpr size_t kBlockAlignment = 256;
constexpr int kMaxCaptureFailures = 2;
constexpr int kMaxUploadPieces = 8;
// Smaller pieces are not cut: a piece's copy and wait cost more than overlapping a few microseconds of transfer saves
// (BERT's three token inputs of 1 KB go up as one copy).
constexpr size_t kMinUploadPieceBytes = size_t{64} << 10;

size_t RoundUp(size_t value) { return (value + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment; }

// A view of `bytes` bytes at `offset` of `block`, as a tensor of `type` and `shape`.
Tensor ViewOf(const std::shared_ptr<Tensor>& block, size_t offset, DataType type, const Shape& shape, size_t bytes) {
  auto* base = static_cast<char*>(block->raw_data());
  return Tensor::Share(type, shape, block, base + offset, bytes, block->memory_info());
}

// A byte view of `bytes` bytes at `offset` of `t`'s buffer (not owning: `t` outlives the copy queued with it).
Tensor BytesOf(const Tensor& t, size_t offset, size_t bytes) {
  return Tensor::Wrap(DataType::kUInt8, Shape({static_cast<int64_t>(bytes)}),
                      static_cast<char*>(const_cast<void*>(t.raw_data())) + offset, bytes, t.memory_info());
}

}  // namespace

struct AutomaticGraphs::Instance {
  Signature signature;
  int key = -1;
  std::vector<Value> frame;     // every value of the captured run (their addresses are in the graph)
  RunStreams remap;             // the set's streams, and the capture's allocators (RetainingAllocator views)
  std::vector<Value> outputs;   // kDevice: the graph's outputs; kHost: the outputs in host memory (shape-derived)
  // Inputs: one device block (views handed to the plan); inputs fed from host memory first, mirrored by a pinned
  // block of host_bytes that the graph copies to the device block's start.
  std::shared_ptr<Tensor> input_block;
  Tensor input_staging;
  size_t host_bytes = 0;
  std::vector<size_t> input_offsets;
  std::vector<Tensor> input_views;
  // kHost: the outputs in one device block, copied by the graph to a pinned block of the same layout.
  std::shared_ptr<Tensor> output_block;
  std::shared_ptr<Tensor> output_staging;
  std::vector<size_t> output_offsets;
  std::vector<std::pair<DataType, Shape>> output_types;
  std::unique_ptr<Event> replayed;  // recorded after each replay
  bool replay_recorded = false;
};

// The late upload pieces of the header: after the first piece has gone up on the compute stream, Start queues the
// others on the upload stream, each followed by an event; the first step on a stream that reads an input of piece
// k waits for piece k's event there (BeforeStep). Join makes the compute stream wait for every piece.
class AutomaticGraphs::LateUploads : public RunObserver {
 public:
  // `piece_of_slot`: the plan's input slots whose bytes go up in a late piece, and that piece (1-based, indexing
  // `ranges` from 1; ranges[0] is the first piece, already queued).
  LateUploads(const RunStreams& remap, Stream& compute, Stream& upload, DataTransfer& transfer,
              std::map<int, size_t> piece_of_slot)
      : remap_(remap), compute_(compute), upload_(upload), transfer_(transfer),
        piece_of_slot_(std::move(piece_of_slot)) {}

  // Queues ranges[1..] of `staging` -> `block` on the upload stream, after the work queued on compute so far.
  void Start(const Tensor& staging, const Tensor& block, const std::vector<std::pair<size_t, size_t>>& ranges) {
    Record(compute_)->Wait(upload_);
    arrived_.resize(ranges.size());
    for (size_t k = 1; k < ranges.size(); ++k) {
      const auto [begin, end] = ranges[k];
      const Tensor from = BytesOf(staging, begin, end - begin);
      Tensor to = BytesOf(block, begin, end - begin);
      const CopyPair pair{&from, &to};
      transfer_.Copy({&pair, 1}, &upload_);
      arrived_[k] = Record(upload_);
    }
  }

  void BeforeStep(const PlanStep& step) override {
    for (int slot : step.inputs) {
      auto it = piece_of_slot_.find(slot);
      if (it == piece_of_slot_.end() || it->second >= arrived_.size()) continue;
      Stream* s = remap_.Map(step.stream);
      Stream& on = s != nullptr ? *s : compute_;
      if (waited_.insert({&on, it->second}).second) arrived_[it->second]->Wait(on);
    }
  }
  void AfterStep(const PlanStep& /*step*/, const std::vector<Value>& /*frame*/) override {}

  // The compute stream waits for every piece (inputs that are also outputs are copied out from the input block).
  void Join() { Record(upload_)->Wait(compute_); }

 private:
  Event* Record(Stream& on) {
    events_.push_back(on.CreateEvent());
    events_.back()->Record(on);
    return events_.back().get();
  }

  const RunStreams& remap_;
  Stream& compute_;
  Stream& upload_;
  DataTransfer& transfer_;
  const std::map<int, size_t> piece_of_slot_;
  std::vector<Event*> arrived_;                   // per piece (from 1): recorded after its copy
  std::set<std::pair<Stream*, size_t>> waited_;   // (stream, piece) already waited for
  std::vector<std::unique_ptr<Event>> events_;    // alive until the capture ends
};

// Two observers of one run, in order (either may be null).
class AutomaticGraphs::BothObservers : public RunObserver {
 public:
  BothObservers(RunObserver* first, RunObserver* second) : first_(first), second_(second) {}
  void BeforeStep(const PlanStep& step) override {
    if (first_ != nullptr) first_->BeforeStep(step);
    if (second_ != nullptr) second_->BeforeStep(step);
  }
  void AfterStep(const PlanStep& step, const std::vector<Value>& frame) override {
    if (first_ != nullptr) first_->AfterStep(step, frame);
    if (second_ != nullptr) second_->AfterStep(step, frame);
  }

 private:
  RunObserver* first_;
  RunObserver* second_;
};

// Watches the captured run (RunObserver) for the early downloads of the header: an output that its step wrote in
// place into the output block goes down to the pinned block on the download stream right after that step.
class AutomaticGraphs::EarlyDownloads : public RunObserver {
 public:
  EarlyDownloads(const ExecutionPlan& plan, const RunStreams& remap, const Instance& instance, Stream& compute,
                 Stream& download, DataTransfer& transfer)
      : plan_(plan), remap_(remap), instance_(instance), compute_(compute), download_(download), transfer_(transfer),
        copied_(plan.output_slots.size(), false) {}

  void BeforeStep(const PlanStep& /*step*/) override {}

  void AfterStep(const PlanStep& step, const std::vector<Value>& frame) override {
    for (int slot : step.outputs) {
      if (slot < 0 || plan_.slots[slot].location.IsHostReadable()) continue;
      for (size_t i = 0; i < plan_.output_slots.size(); ++i) {
        if (plan_.output_slots[i] != slot || copied_[i]) continue;
        const Value& v = frame[static_cast<size_t>(slot)];
        if (!v.is_tensor() || v.tensor().SizeInBytes() == 0) continue;
        const size_t offset = instance_.output_offsets[i];
        if (v.tensor().raw_data() != static_cast<const char*>(instance_.output_block->raw_data()) + offset)
          continue;  // not written in place: copied into the block at the end, and downloaded from there
        Order(StreamOf(step), download_);
        const Tensor from = BytesOf(*instance_.output_block, offset, v.tensor().SizeInBytes());
        Tensor to = BytesOf(*instance_.output_staging, offset, v.tensor().SizeInBytes());
        const CopyPair pair{&from, &to};
        transfer_.Copy({&pair, 1}, &download_);
        copied_[i] = true;
      }
    }
  }

  // Whether output i went down early.
  bool copied(size_t i) const { return copied_[i]; }

  // The compute stream waits for the downloads (a capture must end with every stream it reached joined).
  void Join() {
    if (std::find(copied_.begin(), copied_.end(), true) != copied_.end()) Order(download_, compute_);
  }

 private:
  // `to` waits for the work queued on `from` so far.
  void Order(Stream& from, Stream& to) {
    std::unique_ptr<Event> e = from.CreateEvent();
    e->Record(from);
    e->Wait(to);
    events_.push_back(std::move(e));
  }
  Stream& StreamOf(const PlanStep& step) const {
    Stream* s = remap_.Map(step.stream);
    return s != nullptr ? *s : compute_;
  }

  const ExecutionPlan& plan_;
  const RunStreams& remap_;
  const Instance& instance_;
  Stream& compute_;
  Stream& download_;
  DataTransfer& transfer_;
  std::vector<bool> copied_;                    // per output: went down early
  std::vector<std::unique_ptr<Event>> events_;  // alive until the capture ends
};

AutomaticGraphs::AutomaticGraphs(const ExecutionPlan& plan, ExecutionProvider& ep, const MemoryInfo& staging,
                                 const ThreadPool& threads, size_t limit, bool early_downloads, int upload_pieces)
    : plan_(plan), ep_(ep), staging_(staging), threads_(threads), limit_(std::max<size_t>(limit, 1)),
      early_downloads_(early_downloads), upload_pieces_(std::clamp(upload_pieces, 1, kMaxUploadPieces)) {
  for (size_t i = 0; i < plan.input_slots.size(); ++i) {
    read_.push_back(Reads(plan, i));
    size_t first = plan.steps.size();
    for (size_t s = 0; s < plan.steps.size() && first == plan.steps.size(); ++s) {
      const std::vector<int>& in = plan.steps[s].inputs;
      if (std::find(in.begin(), in.end(), plan.input_slots[i]) != in.end()) first = s;
    }
    first_use_.push_back(first);
  }
}

AutomaticGraphs::~AutomaticGraphs() {
  for (auto& [set, graphs] : sets_)
    for (const auto& instance : graphs->instances) {
      try {
        ep_.ReleaseGraph(instance->key);
      } catch (const std::exception& e) {
        Log(LogLevel::kWarning, "automatic graphs: releasing graph ", instance->key, ": ", e.what());
      }
    }
}

bool AutomaticGraphs::Reads(const ExecutionPlan& plan, size_t i) {
  const int slot = plan.input_slots[i];
  if (std::find(plan.output_slots.begin(), plan.output_slots.end(), slot) != plan.output_slots.end()) return true;
  return std::any_of(plan.steps.begin(), plan.steps.end(), [&](const PlanStep& step) {
    return std::find(step.inputs.begin(), step.inputs.end(), slot) != step.inputs.end();
  });
}

bool AutomaticGraphs::Accepts(const std::vector<Value>& inputs) const {
  const MemoryInfo& device = ep_.memory_info();
  return std::all_of(inputs.begin(), inputs.end(), [&](const Value& v) {
    if (!v.is_tensor() || v.tensor().type() == DataType::kString) return false;
    const MemoryInfo& where = v.tensor().memory_info();
    return where.IsHostReadable() || where == device;
  });
}

AutomaticGraphs::Signature AutomaticGraphs::SignatureOf(const std::vector<Value>& inputs, Outputs mode) const {
  Signature signature;
  signature.reserve(1 + inputs.size() * 6);
  signature.push_back(static_cast<int64_t>(mode));
  for (const Value& v : inputs) {
    const Tensor& t = v.tensor();
    signature.push_back(static_cast<int64_t>(t.type()));
    signature.push_back(t.memory_info().IsHostReadable() ? 0 : 1);
    signature.push_back(static_cast<int64_t>(t.shape().rank()));
    for (size_t d = 0; d < t.shape().rank(); ++d) signature.push_back(t.shape()[d]);
  }
  return signature;
}

std::unique_lock<std::mutex> AutomaticGraphs::Hold(const StreamPool::Set& set) {
  return std::unique_lock<std::mutex>(GraphsOf(set).mutex);
}

AutomaticGraphs::SetGraphs& AutomaticGraphs::GraphsOf(const StreamPool::Set& set) {
  std::lock_guard<std::mutex> lock(sets_mutex_);
  std::unique_ptr<SetGraphs>& graphs = sets_[&set];
  if (graphs == nullptr) graphs = std::make_unique<SetGraphs>();
  return *graphs;
}

void AutomaticGraphs::WarmedUp(const StreamPool::Set& set, const std::vector<Value>& inputs, Outputs mode,
                               const std::vector<Value>& produced) {
  SetGraphs& graphs = GraphsOf(set);
  const Signature signature = SignatureOf(inputs, mode);
  Warmth& warmth = graphs.seen[signature];
  if (warmth.warm) return;
  warmth.outputs.clear();
  for (const Value& v : produced) {
    if (!v.is_tensor()) {  // an optional left empty or a sequence: no fixed layout to capture into
      warmth.failures = kMaxCaptureFailures;
      return;
    }
    warmth.outputs.push_back({v.tensor().type(), v.tensor().shape()});
  }
  warmth.warm = true;
}

bool AutomaticGraphs::Run(const StreamPool::Set& set, const std::vector<Value>& inputs, Outputs mode,
                          const std::vector<size_t>& wanted, const RunOptions& options, std::vector<Value>& outputs,
                          const std::function<void(const std::vector<Value>&)>& copy_out) {
  SetGraphs& graphs = GraphsOf(set);
  const Signature signature = SignatureOf(inputs, mode);
  auto found = std::find_if(graphs.instances.begin(), graphs.instances.end(),
                            [&](const std::unique_ptr<Instance>& i) { return i->signature == signature; });
  if (found != graphs.instances.end()) {
    graphs.instances.splice(graphs.instances.begin(), graphs.instances, found);  // most recently used first
  } else {
    auto seen = graphs.seen.find(signature);
    if (seen == graphs.seen.end() || !seen->second.warm || seen->second.failures >= kMaxCaptureFailures) return false;
    try {
      graphs.instances.push_front(Capture(set, graphs, signature, seen->second, inputs, mode, options));
    } catch (const std::exception& e) {
      ++seen->second.failures;
      Log(LogLevel::kInfo, "automatic graphs (", ep_.type(), "): capturing a run failed",
          seen->second.failures >= kMaxCaptureFailures ? "; runs of these input shapes stay eager" : "", ": ",
          e.what());
      return false;
    }
    while (graphs.instances.size() > limit_) {
      Release(set, *graphs.instances.back());
      graphs.instances.pop_back();
      evictions_.fetch_add(1);
    }
  }
  Instance& instance = *graphs.instances.front();
  if (options.terminate.load()) Fail(ErrorCode::kTerminated, "run terminated by RunOptions::terminate");
  Replay(set, instance, inputs);
  if (mode == Outputs::kDevice) {
    copy_out(instance.outputs);
    return true;
  }
  instance.replayed->Synchronize();
  const AllocatorPtr host = set.services.allocator_for(MemoryInfo::Host());
  outputs.clear();
  std::vector<HostCopy> copies;
  for (size_t i : wanted) {
    const auto& [type, shape] = instance.output_types[i];
    Tensor result = Tensor::Allocate(type, shape, host);
    const void* from = instance.outputs[i].is_tensor()
                           ? instance.outputs[i].tensor().raw_data()
                           : static_cast<const char*>(instance.output_staging->raw_data()) + instance.output_offsets[i];
    copies.push_back({result.raw_data(), from, result.SizeInBytes()});
    outputs.emplace_back(std::move(result));
  }
  CopyHostBuffers(threads_, copies);
  return true;
}

std::unique_ptr<AutomaticGraphs::Instance> AutomaticGraphs::Capture(const StreamPool::Set& set, SetGraphs& graphs,
                                                                    const Signature& signature, const Warmth& warmth,
                                                                    const std::vector<Value>& inputs, Outputs mode,
                                                                    const RunOptions& options) {
  const MemoryInfo& device = ep_.memory_info();
  Stream& stream = *set.services.stream_for(device);
  const AllocatorPtr device_memory = set.services.allocator_on(device, &stream);
  auto instance = std::make_unique<Instance>();
  instance->signature = signature;

  // Inputs: host-fed ones first, in the order of their first reading step (the graph copies that prefix from the
  // pinned block, in pieces), then device-fed ones. Unused inputs are neither copied nor handed to the plan.
  std::vector<size_t> host_fed, device_fed;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (IsRead(i)) (inputs[i].tensor().memory_info().IsHostReadable() ? host_fed : device_fed).push_back(i);
  const auto first_use = [&](size_t i) { return i < first_use_.size() ? first_use_[i] : plan_.steps.size(); };
  std::stable_sort(host_fed.begin(), host_fed.end(), [&](size_t a, size_t b) { return first_use(a) < first_use(b); });
  instance->input_offsets.resize(inputs.size());
  size_t bytes = 0;
  // The upload pieces of the host-fed prefix, [begin, end) of the pinned block: piece k closes at the first input
  // end at or past (2^(k+1) - 1) / (2^N - 1) of the prefix where both it and what remains hold kMinUploadPieceBytes.
  std::vector<std::pair<size_t, size_t>> pieces;
  std::vector<size_t> piece_of(inputs.size(), 0);
  size_t host_total = 0;
  for (size_t i : host_fed) host_total += RoundUp(inputs[i].tensor().SizeInBytes());
  const double whole = static_cast<double>((size_t{1} << upload_pieces_) - 1);
  const auto open_begin = [&] { return pieces.empty() ? size_t{0} : pieces.back().second; };
  for (size_t i : host_fed) {
    const size_t size = inputs[i].tensor().SizeInBytes();
    instance->input_offsets[i] = bytes;
    bytes += RoundUp(size);
    piece_of[i] = size == 0 ? 0 : pieces.size();  // an empty input waits for nothing
    const size_t k = pieces.size();
    const double share = static_cast<double>((size_t{2} << k) - 1) / whole;  // of the prefix, up to piece k's end
    if (k + 1 < static_cast<size_t>(upload_pieces_) && bytes - open_begin() >= kMinUploadPieceBytes &&
        host_total - bytes >= kMinUploadPieceBytes && static_cast<double>(bytes) >= static_cast<double>(host_total) * share)
      pieces.push_back({open_begin(), bytes});
  }
  if (bytes > open_begin()) pieces.push_back({open_begin(), bytes});  // every piece holds bytes
  instance->host_bytes = bytes;
  for (size_t i : device_fed) {
    instance->input_offsets[i] = bytes;
    bytes += RoundUp(inputs[i].tensor().SizeInBytes());
  }
  instance->input_block = std::make_shared<Tensor>(
      Tensor::Allocate(DataType::kUInt8, Shape({static_cast<int64_t>(std::max<size_t>(bytes, 1))}), device_memory));
  if (instance->host_bytes > 0)
    instance->input_staging = Tensor::Allocate(DataType::kUInt8, Shape({static_cast<int64_t>(instance->host_bytes)}),
                                               set.services.allocator_for(staging_));
  RunRequest capture;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].tensor();
    instance->input_views.push_back(IsRead(i) ? ViewOf(instance->input_block, instance->input_offsets[i],
                                                               t.type(), t.shape(), t.SizeInBytes())
                                                      : Tensor());
    capture.inputs.emplace_back();
    if (IsRead(i)) capture.inputs.back() = Value(instance->input_views.back());
  }

  // kHost: the outputs' block (kernels write into it where they can) and its pinned mirror.
  instance->output_types = warmth.outputs;
  if (mode == Outputs::kHost) {
    size_t out_bytes = 0;
    for (size_t i = 0; i < warmth.outputs.size(); ++i) {
      instance->output_offsets.push_back(out_bytes);
      const auto& [type, shape] = warmth.outputs[i];
      if (!plan_.slots[plan_.output_slots[i]].location.IsHostReadable())
        out_bytes += RoundUp(static_cast<size_t>(shape.NumElements()) * SizeOf(type));
    }
    const Shape block_shape({static_cast<int64_t>(std::max<size_t>(out_bytes, 1))});
    instance->output_block =
        std::make_shared<Tensor>(Tensor::Allocate(DataType::kUInt8, block_shape, device_memory));
    instance->output_staging =
        std::make_shared<Tensor>(Tensor::Allocate(DataType::kUInt8, block_shape, set.services.allocator_for(staging_)));
    for (size_t i = 0; i < warmth.outputs.size(); ++i) {
      const int slot = plan_.output_slots[i];
      if (plan_.slots[slot].location.IsHostReadable() || capture.preallocated.count(slot)) continue;
      const auto& [type, shape] = warmth.outputs[i];
      capture.preallocated[slot] = ViewOf(instance->output_block, instance->output_offsets[i], type, shape,
                                          static_cast<size_t>(shape.NumElements()) * SizeOf(type));
    }
  }

  capture.options = &options;
  capture.threads = &threads_;
  capture.synchronize = false;
  // Every block the captured run allocates stays out of circulation while the graph exists (kernel temporaries
  // and values released at their last use included).
  instance->remap = RetainingStreams(plan_, set.streams(), &set.services);
  capture.streams = &instance->remap;
  capture.retained_frame = &instance->frame;
  std::unique_ptr<EarlyDownloads> early;
  if (early_downloads_ && mode == Outputs::kHost) {
    Stream* down = set.services.copy_stream_for ? set.services.copy_stream_for(device, staging_) : nullptr;
    if (down == nullptr || down == &stream) {
      if (graphs.capture_download == nullptr) graphs.capture_download = ep_.CreateStream();
      down = graphs.capture_download.get();
    }
    // (An EP whose streams are all one native stream, e.g. CUDA's user_compute_stream, gains nothing.)
    if (down != nullptr && down->native_handle() != stream.native_handle())
      early = std::make_unique<EarlyDownloads>(plan_, instance->remap, *instance, stream, *down,
                                               *set.services.find_transfer(device, staging_));
  }
  std::unique_ptr<LateUploads> late;
  if (pieces.size() > 1) {
    Stream* up = set.services.copy_stream_for ? set.services.copy_stream_for(staging_, device) : nullptr;
    if (up == nullptr || up == &stream) {
      if (graphs.capture_upload == nullptr) graphs.capture_upload = ep_.CreateStream();
      up = graphs.capture_upload.get();
    }
    if (up != nullptr && up->native_handle() != stream.native_handle()) {
      std::map<int, size_t> piece_of_slot;
      for (size_t i : host_fed)
        if (piece_of[i] > 0 && i < plan_.input_slots.size()) piece_of_slot[plan_.input_slots[i]] = piece_of[i];
      late = std::make_unique<LateUploads>(instance->remap, stream, *up, *set.services.find_transfer(staging_, device),
                                           std::move(piece_of_slot));
    } else {
      pieces = {{0, instance->host_bytes}};  // one native stream: one upload before the first step
    }
  }
  set.Synchronize();  // the capture starts on idle streams: nothing queued earlier can be waited on inside it
  const int key = next_key_.fetch_add(1);
  ep_.BeginCapture(stream, key);
  try {
    if (instance->host_bytes > 0) {
      const size_t first = late != nullptr ? pieces[0].second : instance->host_bytes;
      const Tensor from = BytesOf(instance->input_staging, 0, first);
      Tensor to = BytesOf(*instance->input_block, 0, first);
      const CopyPair pair{&from, &to};
      set.services.find_transfer(staging_, device)->Copy({&pair, 1}, &stream);
      if (late != nullptr) late->Start(instance->input_staging, *instance->input_block, pieces);
    }
    BothObservers observers(late.get(), early.get());
    capture.observer = &observers;
    std::vector<Value> produced = ExecutePlan(plan_, capture, set.services);
    if (late != nullptr) late->Join();
    if (mode == Outputs::kDevice) {
      instance->outputs = produced;
    } else {
      instance->outputs.resize(produced.size());
      std::vector<Tensor> sources, targets;
      sources.reserve(produced.size());
      targets.reserve(produced.size());
      for (size_t i = 0; i < produced.size(); ++i) {
        const auto& [type, shape] = warmth.outputs[i];
        if (!produced[i].is_tensor() || produced[i].tensor().type() != type || produced[i].tensor().shape() != shape)
          Fail(ErrorCode::kRuntime, "output '", plan_.slots[plan_.output_slots[i]].name,
               "' has another type or shape than in the warm-up run with the same input shapes");
        const Tensor& t = produced[i].tensor();
        if (plan_.slots[plan_.output_slots[i]].location.IsHostReadable()) {  // computed from shapes: fixed
          instance->outputs[i] = produced[i];
          continue;
        }
        Tensor view = ViewOf(instance->output_block, instance->output_offsets[i], type, shape, t.SizeInBytes());
        if (view.raw_data() == t.raw_data() || t.SizeInBytes() == 0) continue;  // written in place
        sources.push_back(t);
        targets.push_back(std::move(view));
      }
      std::vector<CopyPair> pairs;
      for (size_t k = 0; k < sources.size(); ++k) pairs.push_back({&sources[k], &targets[k]});
      if (!pairs.empty()) set.services.find_transfer(device, device)->Copy(pairs, &stream);
      if (early == nullptr) {
        const CopyPair down{instance->output_block.get(), instance->output_staging.get()};
        set.services.find_transfer(device, staging_)->Copy({&down, 1}, &stream);
      } else {  // what did not go down early, output by output, then the copy streams join
        std::vector<Tensor> from, to;
        for (size_t i = 0; i < produced.size(); ++i) {
          const size_t bytes = produced[i].tensor().SizeInBytes();
          if (early->copied(i) || bytes == 0 || plan_.slots[plan_.output_slots[i]].location.IsHostReadable())
            continue;
          from.push_back(BytesOf(*instance->output_block, instance->output_offsets[i], bytes));
          to.push_back(BytesOf(*instance->output_staging, instance->output_offsets[i], bytes));
        }
        std::vector<CopyPair> down;
        for (size_t k = 0; k < from.size(); ++k) down.push_back({&from[k], &to[k]});
        if (!down.empty()) set.services.find_transfer(device, staging_)->Copy(down, &stream);
        early->Join();
      }
    }
  } catch (...) {
    try {
      ep_.EndCapture(stream, key);
    } catch (const std::exception&) {  // the capture's own error is the one to report
    }
    ep_.ReleaseGraph(key);
    throw;
  }
  try {
    ep_.EndCapture(stream, key);
  } catch (...) {
    ep_.ReleaseGraph(key);
    throw;
  }
  instance->key = key;
  instance->replayed = stream.CreateEvent();
  captures_.fetch_add(1);
  Log(LogLevel::kInfo, "automatic graphs (", ep_.type(), "): captured graph ", key, " for ", inputs.size(),
      " input(s) of new shapes");
  return instance;
}

void AutomaticGraphs::Replay(const StreamPool::Set& set, Instance& instance, const std::vector<Value>& inputs) {
  const MemoryInfo& device = ep_.memory_info();
  Stream& stream = *set.services.stream_for(device);
  // The previous replay may still read the pinned block (a run that did not wait): it must be done first.
  if (instance.host_bytes > 0 && instance.replay_recorded) instance.replayed->Synchronize();
  std::vector<CopyPair> device_feeds;
  std::vector<HostCopy> host_feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].tensor();
    if (t.SizeInBytes() == 0 || !IsRead(i)) continue;
    if (t.memory_info().IsHostReadable())
      host_feeds.push_back({static_cast<char*>(instance.input_staging.raw_data()) + instance.input_offsets[i],
                            t.raw_data(), t.SizeInBytes()});
    else
      device_feeds.push_back({&t, &instance.input_views[i]});
  }
  CopyHostBuffers(threads_, host_feeds);
  if (!device_feeds.empty()) set.services.find_transfer(device, device)->Copy(device_feeds, &stream);
  ep_.ReplayGraph(stream, instance.key);
  instance.replayed->Record(stream);
  instance.replay_recorded = true;
  replays_.fetch_add(1);
}

void AutomaticGraphs::Release(const StreamPool::Set& set, Instance& instance) {
  set.Synchronize();
  ep_.ReleaseGraph(instance.key);
  Log(LogLevel::kInfo, "automatic graphs (", ep_.type(), "): released graph ", instance.key, " (more than ", limit_,
      " input signatures on one stream set)");
}

}  // namespace tessera
