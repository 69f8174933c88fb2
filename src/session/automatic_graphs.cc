#include "session/automatic_graphs.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/logging.h"
#include "exec/executor.h"
#include "session/graph_capture_check.h"
#include "session/host_copies.h"
#include "tessera/status.h"

namespace tessera {

namespace {

constexpr size_t kBlockAlignment = 256;
constexpr int kMaxCaptureFailures = 2;

size_t RoundUp(size_t value) { return (value + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment; }

// A view of `bytes` bytes at `offset` of `block`, as a tensor of `type` and `shape`.
Tensor ViewOf(const std::shared_ptr<Tensor>& block, size_t offset, DataType type, const Shape& shape, size_t bytes) {
  auto* base = static_cast<char*>(block->raw_data());
  return Tensor::Share(type, shape, block, base + offset, bytes, block->memory_info());
}

// TESSERA_AUTOMATIC_GRAPH_OVERLAP=0: a captured run copies its host-fed inputs in one piece before its first kernel
// and its outputs in one piece after its last (the behaviour before the overlap, kept for A/B measurements).
bool OverlapEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("TESSERA_AUTOMATIC_GRAPH_OVERLAP");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

// The copies between a captured run's pinned blocks and its device blocks. With the set's copy streams (and the
// overlap on) they run beside the kernels inside the graph: the host-fed inputs, laid out in the order the steps
// first read them, are copied on the host -> device stream in groups (the inputs one step reads first), and each
// step that reads a group waits for that group alone; each output a step writes into the output block is copied
// on the device -> host stream right after that step. So GPT-2's key/value caches move while the other layers
// compute instead of before the first kernel and after the last. Otherwise (no copy streams, overlap off) the
// inputs go in one copy before the first kernel and the outputs in one copy after the last, on the compute stream.
class CaptureCopies : public RunObserver {
 public:
  struct Inputs {
    const std::shared_ptr<Tensor>* staging = nullptr;  // pinned, the host-fed prefix of `block`
    const std::shared_ptr<Tensor>* block = nullptr;
    size_t host_bytes = 0;
    std::vector<size_t> offsets;                   // per plan input
    std::vector<bool> host_fed;                    // per plan input
  };
  struct Outputs {
    bool copied = false;                           // kHost: the outputs come back through `staging`
    const std::shared_ptr<Tensor>* block = nullptr;
    const std::shared_ptr<Tensor>* staging = nullptr;
    std::vector<size_t> offsets;                   // per plan output
    std::vector<std::pair<DataType, Shape>> types;
  };

  // `copy_in` / `copy_out`: streams of the device beside the compute stream (null: the copies go on the compute
  // stream, before and after the steps).
  CaptureCopies(const ExecutionPlan& plan, const StreamPool::Set& set, const RunStreams& remap, const MemoryInfo& device,
                const MemoryInfo& staging, Stream* copy_in, Stream* copy_out, Inputs inputs, Outputs outputs)
      : plan_(plan), set_(set), remap_(remap), device_(device), staging_(staging), in_(std::move(inputs)),
        out_(std::move(outputs)), compute_(set.services.stream_for(device)), copy_in_(copy_in), copy_out_(copy_out) {
    out_done_.assign(out_.offsets.size(), false);
  }

  // Per plan input: the first step that reads it (plan.steps.size() when none does).
  static std::vector<size_t> FirstUse(const ExecutionPlan& plan) {
    std::vector<size_t> first(plan.input_slots.size(), plan.steps.size());
    for (size_t t = plan.steps.size(); t-- > 0;)
      for (int slot : plan.steps[t].inputs)
        for (size_t i = 0; i < plan.input_slots.size(); ++i)
          if (plan.input_slots[i] == slot) first[i] = t;
    return first;
  }

  // What the capture overlapped, for the log: "inputs in 12 groups, 24 of 25 outputs as written".
  std::string Summary() const {
    if (groups_.empty() && !copy_out_used_) return "copies before and after the steps";
    return "inputs copied in " + std::to_string(groups_.size()) + " group(s) beside the steps, " +
           std::to_string(std::count(out_done_.begin(), out_done_.end(), true)) + " of " +
           std::to_string(out_done_.size()) + " output(s) copied out as written";
  }

  // Queued at the capture's start, before the plan's steps.
  void Start() {
    if (in_.host_bytes == 0) return;
    if (copy_in_ == nullptr) {
      CopyInput(0, in_.host_bytes, *compute_);
      return;
    }
    // Groups: consecutive host-fed inputs (in layout order) that the same step reads first.
    const std::vector<size_t> first = FirstUse(plan_);
    std::vector<size_t> host;
    for (size_t i = 0; i < in_.host_fed.size(); ++i)
      if (in_.host_fed[i]) host.push_back(i);
    std::sort(host.begin(), host.end(), [&](size_t a, size_t b) { return in_.offsets[a] < in_.offsets[b]; });
    std::unique_ptr<Event> fork = compute_->CreateEvent();
    fork->Record(*compute_);
    fork->Wait(*copy_in_);
    for (size_t k = 0; k < host.size();) {
      size_t end = k + 1;
      while (end < host.size() && first[host[end]] == first[host[k]]) ++end;
      const size_t begin_byte = in_.offsets[host[k]];
      const size_t end_byte = end < host.size() ? in_.offsets[host[end]] : in_.host_bytes;
      Group group;
      if (end_byte > begin_byte) {
        CopyInput(begin_byte, end_byte - begin_byte, *copy_in_);
        group.arrived = copy_in_->CreateEvent();
        group.arrived->Record(*copy_in_);
      }
      for (size_t j = k; j < end; ++j) group_of_[plan_.input_slots[host[j]]] = groups_.size();
      groups_.push_back(std::move(group));
      k = end;
    }
  }

  void BeforeStep(const PlanStep& step) override {
    if (groups_.empty()) return;
    Stream* stream = remap_.Map(step.stream);
    if (stream == nullptr) stream = compute_;
    for (int slot : step.inputs) {
      auto it = group_of_.find(slot);
      if (it == group_of_.end()) continue;
      Group& group = groups_[it->second];
      if (group.arrived == nullptr ||
          std::find(group.waited.begin(), group.waited.end(), stream) != group.waited.end())
        continue;
      group.arrived->Wait(*stream);
      group.waited.push_back(stream);
    }
  }

  void AfterStep(const PlanStep& step, const std::vector<Value>& frame) override {
    if (!out_.copied || copy_out_ == nullptr) return;
    std::vector<Tensor> sources, targets;
    for (int slot : step.outputs) {
      if (slot < 0) continue;
      for (size_t j = 0; j < plan_.output_slots.size(); ++j) {
        if (plan_.output_slots[j] != slot || out_done_[j] || !InOutputBlock(j, frame[slot])) continue;
        sources.push_back(BlockView(*out_.block, j));
        targets.push_back(BlockView(*out_.staging, j));
        out_done_[j] = true;
      }
    }
    if (sources.empty()) return;
    Stream* stream = remap_.Map(step.stream);
    if (stream == nullptr) stream = compute_;
    std::unique_ptr<Event> written = stream->CreateEvent();
    written->Record(*stream);
    written->Wait(*copy_out_);
    Copy(sources, targets, device_, staging_, *copy_out_);
    copy_out_used_ = true;
  }

  // Queued after the plan's steps, before anything that may read an input (an output that is a graph input):
  // the compute stream waits for every input copy, as a capture must join its streams back.
  void JoinInputs() {
    if (groups_.empty()) return;
    std::unique_ptr<Event> joined = copy_in_->CreateEvent();
    joined->Record(*copy_in_);
    joined->Wait(*compute_);
  }

  // Queued last (after the outputs not written in place were copied into the output block): the outputs' copies to
  // the pinned block that AfterStep did not queue, on the compute stream; then the device -> host stream's join.
  void FinishOutputs() {
    if (out_.copied) {
      std::vector<Tensor> sources, targets;
      bool any_done = std::find(out_done_.begin(), out_done_.end(), true) != out_done_.end();
      if (!any_done) {
        sources.push_back(**out_.block);
        targets.push_back(**out_.staging);
      } else {
        for (size_t j = 0; j < out_done_.size(); ++j) {
          if (out_done_[j] || plan_.slots[plan_.output_slots[j]].location.IsHostReadable()) continue;
          if (BlockBytes(j) == 0) continue;
          sources.push_back(BlockView(*out_.block, j));
          targets.push_back(BlockView(*out_.staging, j));
        }
      }
      if (!sources.empty()) Copy(sources, targets, device_, staging_, *compute_);
    }
    if (copy_out_used_) {
      std::unique_ptr<Event> joined = copy_out_->CreateEvent();
      joined->Record(*copy_out_);
      joined->Wait(*compute_);
    }
  }

 private:
  struct Group {
    std::unique_ptr<Event> arrived;  // null for a group of empty tensors
    std::vector<Stream*> waited;     // streams already made to wait for it
  };

  size_t BlockBytes(size_t j) const {
    const auto& [type, shape] = out_.types[j];
    return static_cast<size_t>(shape.NumElements()) * SizeOf(type);
  }
  Tensor BlockView(const std::shared_ptr<Tensor>& block, size_t j) const {
    const auto& [type, shape] = out_.types[j];
    return ViewOf(block, out_.offsets[j], type, shape, BlockBytes(j));
  }
  // Whether output j, as `value`, was written by its step straight into its place in the output block.
  bool InOutputBlock(size_t j, const Value& value) const {
    if (plan_.slots[plan_.output_slots[j]].location.IsHostReadable() || !value.is_tensor()) return false;
    const Tensor& t = value.tensor();
    const auto& [type, shape] = out_.types[j];
    if (t.type() != type || t.shape() != shape || t.SizeInBytes() == 0) return false;
    return t.raw_data() == static_cast<const char*>((*out_.block)->raw_data()) + out_.offsets[j];
  }
  void CopyInput(size_t offset, size_t bytes, Stream& stream) {
    const Shape shape({static_cast<int64_t>(bytes)});
    Tensor from = ViewOf(*in_.staging, offset, DataType::kUInt8, shape, bytes);
    std::vector<Tensor> to{ViewOf(*in_.block, offset, DataType::kUInt8, shape, bytes)};
    Copy({from}, to, staging_, device_, stream);
  }
  void Copy(const std::vector<Tensor>& sources, std::vector<Tensor>& targets, const MemoryInfo& src,
            const MemoryInfo& dst, Stream& stream) {
    std::vector<CopyPair> pairs;
    for (size_t k = 0; k < sources.size(); ++k) pairs.push_back({&sources[k], &targets[k]});
    set_.services.find_transfer(src, dst)->Copy(pairs, &stream);
  }

  const ExecutionPlan& plan_;
  const StreamPool::Set& set_;
  const RunStreams& remap_;
  const MemoryInfo device_, staging_;
  Inputs in_;
  Outputs out_;
  Stream* const compute_;
  Stream* const copy_in_;
  Stream* const copy_out_;
  std::vector<Group> groups_;
  std::map<int, size_t> group_of_;  // input slot -> group
  std::vector<bool> out_done_;      // per output: queued by AfterStep
  bool copy_out_used_ = false;
};

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
  std::shared_ptr<Tensor> input_staging;
  size_t host_bytes = 0;
  std::vector<size_t> input_offsets;
  std::vector<bool> read;  // per input: Reads (unused inputs are neither copied nor handed to the plan)
  std::vector<Tensor> input_views;
  // kHost: the outputs in one device block, copied by the graph to a pinned block of the same layout.
  std::shared_ptr<Tensor> output_block;
  std::shared_ptr<Tensor> output_staging;
  std::vector<size_t> output_offsets;
  std::vector<std::pair<DataType, Shape>> output_types;
  std::unique_ptr<Event> replayed;  // recorded after each replay
  bool replay_recorded = false;
};

AutomaticGraphs::AutomaticGraphs(const ExecutionPlan& plan, ExecutionProvider& ep, const MemoryInfo& staging,
                                 const ThreadPool& threads, size_t limit)
    : plan_(plan), ep_(ep), staging_(staging), threads_(threads), limit_(std::max<size_t>(limit, 1)) {}

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
      graphs.instances.push_front(Capture(set, signature, seen->second, inputs, mode, options));
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

std::unique_ptr<AutomaticGraphs::Instance> AutomaticGraphs::Capture(const StreamPool::Set& set,
                                                                    const Signature& signature, const Warmth& warmth,
                                                                    const std::vector<Value>& inputs, Outputs mode,
                                                                    const RunOptions& options) {
  const MemoryInfo& device = ep_.memory_info();
  Stream& stream = *set.services.stream_for(device);
  const AllocatorPtr device_memory = set.services.allocator_on(device, &stream);
  auto instance = std::make_unique<Instance>();
  instance->signature = signature;

  // Inputs: host-fed ones first, in the order the steps first read them (the graph copies that prefix from the
  // pinned block, CaptureCopies), then device-fed ones.
  instance->input_offsets.resize(inputs.size());
  std::vector<size_t> order(inputs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (inputs.size() == plan_.input_slots.size()) {
    const std::vector<size_t> first = CaptureCopies::FirstUse(plan_);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
  }
  instance->read.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) instance->read[i] = i >= plan_.input_slots.size() || Reads(plan_, i);
  size_t bytes = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i : order) {
      const Tensor& t = inputs[i].tensor();
      if (!instance->read[i]) continue;  // an unused input: not copied, not handed to the plan
      if (t.memory_info().IsHostReadable() != (pass == 0)) continue;
      instance->input_offsets[i] = bytes;
      bytes += RoundUp(t.SizeInBytes());
    }
    if (pass == 0) instance->host_bytes = bytes;
  }
  instance->input_block = std::make_shared<Tensor>(
      Tensor::Allocate(DataType::kUInt8, Shape({static_cast<int64_t>(std::max<size_t>(bytes, 1))}), device_memory));
  if (instance->host_bytes > 0)
    instance->input_staging = std::make_shared<Tensor>(Tensor::Allocate(
        DataType::kUInt8, Shape({static_cast<int64_t>(instance->host_bytes)}), set.services.allocator_for(staging_)));
  RunRequest capture;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].tensor();
    instance->input_views.push_back(instance->read[i] ? ViewOf(instance->input_block, instance->input_offsets[i],
                                                               t.type(), t.shape(), t.SizeInBytes())
                                                      : Tensor());
    capture.inputs.emplace_back();
    if (instance->read[i]) capture.inputs.back() = Value(instance->input_views.back());
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
  CaptureCopies::Inputs copied_in;
  copied_in.staging = &instance->input_staging;
  copied_in.block = &instance->input_block;
  copied_in.host_bytes = instance->host_bytes;
  copied_in.offsets = instance->input_offsets;
  for (size_t i = 0; i < inputs.size(); ++i)
    copied_in.host_fed.push_back(instance->read[i] && inputs[i].tensor().memory_info().IsHostReadable());
  CaptureCopies::Outputs copied_out;
  copied_out.copied = mode == Outputs::kHost;
  copied_out.block = &instance->output_block;
  copied_out.staging = &instance->output_staging;
  copied_out.offsets = instance->output_offsets;
  copied_out.types = warmth.outputs;
  // The copies' streams: the set's copy streams where the EP has them, else two streams of the EP kept for
  // captures on this set (only captures queue work on them; replays run on the compute stream).
  Stream* copy_in = nullptr;
  Stream* copy_out = nullptr;
  if (OverlapEnabled()) {
    const auto in = set.copy_in.find(device), out = set.copy_out.find(device);
    SetGraphs& graphs = GraphsOf(set);
    if (in != set.copy_in.end()) {
      copy_in = in->second.get();
    } else {
      if (graphs.capture_in == nullptr) graphs.capture_in = ep_.CreateStream();
      copy_in = graphs.capture_in.get();
    }
    if (out != set.copy_out.end()) {
      copy_out = out->second.get();
    } else {
      if (graphs.capture_out == nullptr) graphs.capture_out = ep_.CreateStream();
      copy_out = graphs.capture_out.get();
    }
  }
  CaptureCopies copies(plan_, set, instance->remap, device, staging_, copy_in, copy_out, std::move(copied_in),
                       std::move(copied_out));
  capture.observer = &copies;
  set.Synchronize();  // the capture starts on idle streams: nothing queued earlier can be waited on inside it
  const int key = next_key_.fetch_add(1);
  ep_.BeginCapture(stream, key);
  try {
    copies.Start();
    const std::vector<Value> produced = ExecutePlan(plan_, capture, set.services);
    copies.JoinInputs();
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
      copies.FinishOutputs();
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
      " input(s) of new shapes (", copies.Summary(), ")");
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
    if (t.SizeInBytes() == 0 || !instance.read[i]) continue;
    if (t.memory_info().IsHostReadable())
      host_feeds.push_back({static_cast<char*>(instance.input_staging->raw_data()) + instance.input_offsets[i],
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
