#include "exec/executor.h"

#include <algorithm>
#include <cstring>

#include "core/logging.h"

namespace tessera {

namespace {

struct Frame {
  const ExecutionPlan& plan;
  RunRequest& request;
  const PlanServices& services;
  std::vector<Value> values;  // what the run produced and was fed; constant slots stay none (see At)
  std::vector<std::unique_ptr<Event>> events;

  // The value of `slot`: the run's, or the plan's constant (initializers are read in place rather than copied into
  // every run's frame: a Tensor copy allocates its shape, ~100 ns per initializer per run).
  const Value& At(int slot) const {
    const Value& v = values[slot];
    return v.is_none() ? plan.slots[slot].constant : v;
  }

  // The run's stream and allocator for a step's (the plan's) ones.
  Stream* StreamOf(const PlanStep& step) const {
    return request.streams == nullptr ? step.stream : request.streams->Map(step.stream);
  }
  const AllocatorPtr& AllocatorOf(const PlanStep& step) const {
    return request.streams == nullptr ? step.allocator : request.streams->Map(step.allocator);
  }
};

class StepContext : public KernelContext {
 public:
  StepContext(Frame& frame, const PlanStep& step)
      : frame_(frame), step_(step), stream_(frame.StreamOf(step)), allocator_(frame.AllocatorOf(step)) {}

  const Node& node() const override { return *step_.node; }
  size_t NumInputs() const override { return step_.inputs.size(); }
  const Value* InputValue(size_t i) const override {
    if (i >= step_.inputs.size() || step_.inputs[i] < 0) return nullptr;
    const Value& v = frame_.At(step_.inputs[i]);
    return v.is_none() ? nullptr : &v;
  }
  size_t NumOutputs() const override { return step_.outputs.size(); }

  Tensor& Output(size_t i, DataType type, const Shape& shape) override {
    if (i >= step_.outputs.size())
      Fail(ErrorCode::kRuntime, step_.node->Describe(), ": kernel wrote output ", i, " but the node has ",
           step_.outputs.size());
    const int slot = step_.outputs[i];
    Value& target = slot >= 0 ? frame_.values[slot] : Scratch(i);
    if (slot >= 0) {
      auto pre = frame_.request.preallocated.find(slot);
      if (pre != frame_.request.preallocated.end() && pre->second.memory_info() == frame_.plan.slots[slot].location) {
        const Tensor& t = pre->second;
        if (t.type() != type || t.shape() != shape)
          Fail(ErrorCode::kInvalidArgument, "output '", frame_.plan.slots[slot].name, "' is bound to ", t.Describe(),
               " but the model produces ", DataTypeName(type), shape.ToString());
        // Bound to a model input's memory that the run may still read: produced elsewhere and copied into the
        // binding once the run is complete (Session::Run(IoBinding)).
        if (MayWriteInto(t, i)) {
          target = Value(t);
          return target.tensor();
        }
      }
    }
    // Host outputs (KernelDef::host_outputs) of a device kernel live in host memory, not the EP's.
    const bool elsewhere = slot >= 0 && frame_.plan.slots[slot].location != allocator_->Info();
    const AllocatorPtr& allocator =
        elsewhere ? frame_.services.allocator_for(frame_.plan.slots[slot].location) : allocator_;
    target = Value(Tensor::Allocate(type, shape, allocator));
    return target.tensor();
  }

  void SetOutput(size_t i, Value value) override {
    if (i >= step_.outputs.size())
      Fail(ErrorCode::kRuntime, step_.node->Describe(), ": kernel set output ", i, " but the node has ",
           step_.outputs.size());
    (step_.outputs[i] >= 0 ? frame_.values[step_.outputs[i]] : Scratch(i)) = std::move(value);
    set_by_kernel_.resize(step_.outputs.size());
    set_by_kernel_[i] = true;  // a none value set explicitly is an empty optional, not a missing output
  }

  Stream* stream() const override { return stream_; }
  const ThreadPool& thread_pool() const override { return *frame_.request.threads; }
  const AllocatorPtr& allocator() const override { return allocator_; }
  const Value* OuterScopeValue(const std::string& name) const override {
    // A none value here is an empty optional, not a miss: ONNX forbids subgraphs to shadow outer names.
    const int slot = frame_.plan.FindSlot(name);
    if (slot >= 0) return &frame_.At(slot);
    return frame_.request.parent ? frame_.request.parent->OuterScopeValue(name) : nullptr;
  }
  bool preparing_only() const override { return frame_.request.preparing_only; }
  bool terminate_requested() const override { return !StopReason().empty(); }
  std::string StopReason() const override { return tessera::StopReason(frame_.request); }
  bool SetByKernel(size_t i) const { return i < set_by_kernel_.size() && set_by_kernel_[i]; }
  const RunRequest& request() const { return frame_.request; }

 private:
  // Whether this step may write into `t`, a caller's tensor bound to its output `output`: yes when `t` shares no
  // memory with a model input, or when it is exactly the buffer of the model input this step reads as that output's
  // in-place input (KernelDef::in_place_inputs, the input being read there directly) and no other step reads that
  // input: an in-place update, such as a key/value cache written at the current position.
  bool MayWriteInto(const Tensor& t, size_t output) const {
    const auto begin = [](const Tensor& x) { return static_cast<const char*>(x.raw_data()); };
    const std::vector<Value>& feeds = frame_.request.inputs;
    for (size_t k = 0; k < feeds.size() && k < frame_.plan.input_slots.size(); ++k) {
      if (!feeds[k].is_tensor()) continue;
      const Tensor& feed = feeds[k].tensor();
      if (feed.memory_info() != t.memory_info() || feed.SizeInBytes() == 0 || t.SizeInBytes() == 0) continue;
      if (begin(feed) >= begin(t) + t.SizeInBytes() || begin(t) >= begin(feed) + feed.SizeInBytes()) continue;
      const int input_slot = frame_.plan.input_slots[k];
      const int in_place = step_.def != nullptr ? step_.def->InPlaceInput(output) : -1;
      if (in_place < 0 || static_cast<size_t>(in_place) >= step_.inputs.size() || step_.inputs[in_place] != input_slot)
        return false;
      const Value* read = InputValue(static_cast<size_t>(in_place));
      if (read == nullptr || !read->is_tensor() || read->tensor().raw_data() != t.raw_data() ||
          feed.raw_data() != t.raw_data() || feed.SizeInBytes() != t.SizeInBytes())
        return false;
      size_t readers = 0;
      for (const PlanStep& s : frame_.plan.steps)
        readers += static_cast<size_t>(std::count(s.inputs.begin(), s.inputs.end(), input_slot));
      const auto& outputs = frame_.plan.output_slots;
      if (readers != 1 || std::find(outputs.begin(), outputs.end(), input_slot) != outputs.end()) return false;
    }
    return true;
  }

  Value& Scratch(size_t i) {
    if (scratch_.size() <= i) scratch_.resize(i + 1);
    return scratch_[i];
  }
  Frame& frame_;
  const PlanStep& step_;
  Stream* stream_;
  const AllocatorPtr& allocator_;
  std::vector<Value> scratch_;  // outputs the graph omits but the kernel writes anyway
  std::vector<bool> set_by_kernel_;  // outputs given through SetOutput
};

void WaitForProducers(Frame& frame, const PlanStep& step) {
  for (const PlanStep::Wait& w : step.wait_for) {
    Event* event = frame.events[w.producer].get();
    if (event == nullptr) continue;  // the producer ran synchronously
    Stream* stream = frame.StreamOf(step);
    if (w.on_host || stream == nullptr)
      event->Synchronize();
    else
      event->Wait(*stream);
  }
}

void RunKernelStep(Frame& frame, const PlanStep& step) {
  StepContext ctx(frame, step);
  try {
    step.kernel->Compute(ctx);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find(step.node->name) != std::string::npos) throw;
    throw Error(e.code(), step.node->Describe() + ": " + what);
  } catch (const std::bad_alloc&) {
    Fail(ErrorCode::kOutOfMemory, step.node->Describe(), ": out of host memory");
  } catch (const std::exception& e) {
    Fail(ErrorCode::kRuntime, step.node->Describe(), ": ", e.what());
  }
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const int slot = step.outputs[i];
    if (slot >= 0 && frame.values[slot].is_none() && !ctx.SetByKernel(i) && frame.plan.slots[slot].name.size() &&
        step.node->outputs[i].size())
      Fail(ErrorCode::kRuntime, step.node->Describe(), ": kernel did not produce output '", step.node->outputs[i], "'");
  }
}

Tensor CopyTensor(const Tensor& src, const AllocatorPtr& allocator, DataTransfer* transfer, Stream* stream) {
  Tensor dst = Tensor::Allocate(src.type(), src.shape(), allocator);
  CopyPair pair{&src, &dst};
  transfer->Copy({&pair, 1}, stream);
  return dst;
}

// A copy of a tensor or sequence into `allocator`'s memory (none stays none), queued on `stream` (nullptr: done
// before returning).
Value CopyValue(const Value& src, const AllocatorPtr& allocator, DataTransfer* transfer, Stream* stream) {
  if (src.is_tensor()) return Value(CopyTensor(src.tensor(), allocator, transfer, stream));
  if (!src.is_sequence()) return Value();
  TensorSequence out;
  for (const Tensor& t : src.sequence()) out.push_back(CopyTensor(t, allocator, transfer, stream));
  return Value(std::move(out));
}

// Later work on `later` waits (device-side) for the work queued on `earlier` so far.
void OrderAfter(Stream& earlier, Stream& later) {
  std::unique_ptr<Event> event = earlier.CreateEvent();
  event->Record(earlier);
  event->Wait(later);
}

void SynchronizeStreams(const Frame& frame) {
  for (Stream* s : frame.plan.streams)
    (frame.request.streams == nullptr ? s : frame.request.streams->Map(s))->Synchronize();
}

void RunCopyStep(Frame& frame, const PlanStep& step) {
  Stream* stream = frame.StreamOf(step);
  // A capture run (the frame is retained for the graph) copies host values synchronously, outside the recorded work:
  // GraphCaptureBlocker lets a captured plan copy only host values computed from shapes alone, which are the same at
  // every replay of the graph (one per input-shape signature), and the retained frame keeps the copy's buffer.
  const Value& src = frame.At(step.inputs[0]);
  if (frame.request.retained_frame != nullptr && stream != nullptr && src.is_tensor() &&
      src.tensor().memory_info().IsHostReadable()) {
    frame.values[step.outputs[0]] = CopyValue(src, frame.AllocatorOf(step), step.transfer, nullptr);
    return;
  }
  if (stream == nullptr) SynchronizeStreams(frame);  // copies between two devices: both sides must be idle
  frame.values[step.outputs[0]] = CopyValue(src, frame.AllocatorOf(step), step.transfer, stream);
}

}  // namespace

const RunRequest* RequestOf(const KernelContext& ctx) {
  const auto* step = dynamic_cast<const StepContext*>(&ctx);
  return step != nullptr ? &step->request() : nullptr;
}

Value CopyValueTo(const Value& value, const MemoryInfo& dst, const PlanServices& services, bool wait) {
  return std::move(CopyValuesTo({&value, 1}, {&dst, 1}, services, wait)[0]);
}

namespace {

// Host tensors up to this size bound for a device with staging memory are packed into one staging block (a host
// memcpy each, then one DMA); larger ones are copied directly, where a memcpy would cost more than it saves.
constexpr size_t kMaxStagedTensorBytes = size_t{256} << 10;
constexpr size_t kMaxStagedBatchBytes = size_t{4} << 20;
constexpr size_t kStagingAlignment = 256;

size_t RoundUpTo(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// The tensors `which` of `values`, in memory `src`, copied into memory `dst` (results into `out`), in one batch.
void CopyBatch(std::span<const Value> values, const std::vector<size_t>& which, const MemoryInfo& src,
               const MemoryInfo& dst, const PlanServices& services, bool wait, std::vector<Value>& out) {
  DataTransfer* transfer = services.find_transfer(src, dst);
  Stream* src_stream = services.stream_for(src);
  Stream* dst_stream = services.stream_for(dst);
  Stream* stream = services.copy_stream_for(src, dst);
  if (stream == nullptr) {  // between two devices (or host memory only): synchronous, once the source is complete
    if (src_stream != nullptr) src_stream->Synchronize();
    const AllocatorPtr allocator = services.allocator_for(dst);
    std::vector<CopyPair> pairs;
    for (size_t i : which) {
      out[i] = Value(Tensor::Allocate(values[i].tensor().type(), values[i].tensor().shape(), allocator));
      pairs.push_back({&values[i].tensor(), &out[i].tensor()});
    }
    transfer->Copy(pairs, nullptr);
    return;
  }
  // The copies wait for the sources' producers; the destination's compute stream (its readers) waits for them.
  if (src_stream != nullptr && src_stream != stream) OrderAfter(*src_stream, *stream);
  const AllocatorPtr allocator = services.allocator_on(dst, stream);
  // Small pageable host tensors: packed into one staging block, one copy into one device block.
  const std::optional<MemoryInfo> staging =
      src == MemoryInfo::Host() && services.staging_memory_for ? services.staging_memory_for(dst) : std::nullopt;
  std::vector<size_t> staged, direct;
  std::vector<size_t> offsets;
  size_t staged_bytes = 0;
  for (size_t i : which) {
    const Tensor& t = values[i].tensor();
    const size_t bytes = t.SizeInBytes();
    const bool stage = staging.has_value() && t.type() != DataType::kString && bytes > 0 &&
                       bytes <= kMaxStagedTensorBytes && staged_bytes + bytes <= kMaxStagedBatchBytes;
    if (!stage) {
      direct.push_back(i);
      continue;
    }
    staged.push_back(i);
    offsets.push_back(staged_bytes);
    staged_bytes = RoundUpTo(staged_bytes + bytes, kStagingAlignment);
  }
  if (staged.size() == 1) {  // nothing to pack: a single tensor goes directly from its staging copy
    staged_bytes = values[staged[0]].tensor().SizeInBytes();
  }
  if (!staged.empty()) {
    const Shape block_shape{static_cast<int64_t>(staged_bytes)};
    Tensor host_block = Tensor::Allocate(DataType::kUInt8, block_shape, services.allocator_for(*staging));
    auto* host_base = static_cast<char*>(host_block.raw_data());
    for (size_t k = 0; k < staged.size(); ++k) {
      const Tensor& t = values[staged[k]].tensor();
      std::memcpy(host_base + offsets[k], t.raw_data(), t.SizeInBytes());
    }
    auto device_block = std::make_shared<Tensor>(Tensor::Allocate(DataType::kUInt8, block_shape, allocator));
    const CopyPair pair{&host_block, device_block.get()};
    services.find_transfer(*staging, dst)->Copy({&pair, 1}, stream);
    auto* device_base = static_cast<char*>(device_block->raw_data());
    for (size_t k = 0; k < staged.size(); ++k) {
      const Tensor& t = values[staged[k]].tensor();
      out[staged[k]] =
          Value(Tensor::Share(t.type(), t.shape(), device_block, device_base + offsets[k], t.SizeInBytes(), dst));
    }
  }
  if (!direct.empty()) {
    std::vector<CopyPair> pairs;
    for (size_t i : direct) {
      out[i] = Value(Tensor::Allocate(values[i].tensor().type(), values[i].tensor().shape(), allocator));
      pairs.push_back({&values[i].tensor(), &out[i].tensor()});
    }
    transfer->Copy(pairs, stream);
  }
  if (dst_stream != nullptr && dst_stream != stream) OrderAfter(*stream, *dst_stream);
  if (wait) {
    std::unique_ptr<Event> done = stream->CreateEvent();
    done->Record(*stream);
    done->Synchronize();
  }
}

}  // namespace

std::vector<Value> CopyValuesTo(std::span<const Value> values, std::span<const MemoryInfo> dsts,
                                const PlanServices& services, bool wait) {
  if (values.size() != dsts.size())
    Fail(ErrorCode::kRuntime, "CopyValuesTo: ", values.size(), " values but ", dsts.size(), " destinations");
  std::vector<Value> out(values.size());
  struct Batch {
    MemoryInfo src, dst;
    std::vector<size_t> which;
  };
  std::vector<Batch> batches;
  for (size_t i = 0; i < values.size(); ++i) {
    const Value& v = values[i];
    if (v.is_none()) continue;
    if (v.is_sequence()) {  // each element on its own, as one value
      const MemoryInfo src = v.sequence().empty() ? dsts[i] : v.sequence()[0].memory_info();
      if (src == dsts[i]) {
        out[i] = v;
        continue;
      }
      std::vector<Value> elements;
      for (const Tensor& t : v.sequence()) elements.push_back(Value(t));
      std::vector<MemoryInfo> where(elements.size(), dsts[i]);
      TensorSequence copied;
      for (Value& e : CopyValuesTo(elements, where, services, wait)) copied.push_back(e.tensor());
      out[i] = Value(std::move(copied));
      continue;
    }
    const MemoryInfo& src = v.tensor().memory_info();
    if (src == dsts[i]) {
      out[i] = v;
      continue;
    }
    auto batch = std::find_if(batches.begin(), batches.end(),
                              [&](const Batch& b) { return b.src == src && b.dst == dsts[i]; });
    if (batch == batches.end()) batch = batches.insert(batches.end(), Batch{src, dsts[i], {}});
    batch->which.push_back(i);
  }
  for (const Batch& b : batches) CopyBatch(values, b.which, b.src, b.dst, services, wait, out);
  return out;
}

std::string StopReason(const RunRequest& request) {
  if (request.options != nullptr && request.options->terminate.load()) return "RunOptions::terminate";
  if (request.deadline != std::chrono::steady_clock::time_point::max() &&
      std::chrono::steady_clock::now() >= request.deadline)
    return "RunOptions::timeout_ms (" +
           std::to_string(request.options != nullptr ? request.options->timeout_ms : int64_t{0}) + " ms)";
  return "";
}

std::vector<Value> ExecutePlan(const ExecutionPlan& plan, RunRequest& request, const PlanServices& services) {
  Frame frame{plan, request, services, std::vector<Value>(plan.slots.size()), {}};
  frame.events.resize(plan.steps.size());
  // The feeds move where their readers are, as one batch (one staging block for small host tensors).
  std::vector<MemoryInfo> input_places;
  for (int slot : plan.input_slots) input_places.push_back(plan.slots[slot].location);
  const size_t fed = std::min(request.inputs.size(), input_places.size());
  // A feed in device memory read where the host reads it (a CPU node consumes it) is copied on the device's
  // stream: the host must wait for that copy, since no step of the plan produces the feed to wait on.
  bool host_reads_device_feed = false;
  for (size_t i = 0; i < fed; ++i)
    if (request.inputs[i].is_tensor() && !request.inputs[i].tensor().memory_info().IsHostReadable() &&
        input_places[i].IsHostReadable())
      host_reads_device_feed = true;
  std::vector<Value> placed =
      CopyValuesTo(std::span<const Value>(request.inputs.data(), fed),
                   std::span<const MemoryInfo>(input_places.data(), fed), services, host_reads_device_feed);
  for (size_t i = 0; i < fed; ++i) frame.values[plan.input_slots[i]] = std::move(placed[i]);
  const size_t outer = std::min(plan.outer_slots.size(), request.outer.size());
  std::vector<MemoryInfo> outer_places;
  for (size_t i = 0; i < outer; ++i) outer_places.push_back(plan.slots[plan.outer_slots[i]].location);
  std::vector<Value> outer_placed =
      CopyValuesTo(std::span<const Value>(request.outer.data(), outer), outer_places, services, true);
  for (size_t i = 0; i < outer; ++i) frame.values[plan.outer_slots[i]] = std::move(outer_placed[i]);
  for (size_t t = 0; t < plan.steps.size(); ++t) {
    const PlanStep& step = plan.steps[t];
    if (const std::string reason = StopReason(request); !reason.empty())
      Fail(ErrorCode::kTerminated, "run stopped by ", reason, " before ", step.label);
    WaitForProducers(frame, step);
    if (LogEnabled(LogLevel::kVerbose)) Log(LogLevel::kVerbose, "run step ", t, ": ", step.label);
    if (request.observer != nullptr) request.observer->BeforeStep(step);
    if (step.kind == PlanStep::Kind::kKernel)
      RunKernelStep(frame, step);
    else
      RunCopyStep(frame, step);
    if (step.record_event && step.stream != nullptr) {
      Stream* stream = frame.StreamOf(step);
      frame.events[t] = stream->CreateEvent();
      frame.events[t]->Record(*stream);
    }
    if (request.observer != nullptr) request.observer->AfterStep(step, frame.values);
    if (request.retained_frame == nullptr)
      for (int s : step.release_after) frame.values[s] = Value();
  }
  if (request.synchronize) SynchronizeStreams(frame);
  std::vector<Value> outputs;
  outputs.reserve(plan.output_slots.size());
  for (int slot : plan.output_slots) outputs.push_back(frame.At(slot));
  if (request.retained_frame != nullptr) *request.retained_frame = std::move(frame.values);
  return outputs;
}

}  // namespace tessera
