#include "exec/executor.h"

#include "core/logging.h"

namespace tessera {

namespace {

struct Frame {
  const ExecutionPlan& plan;
  RunRequest& request;
  const PlanServices& services;
  std::vector<Value> values;
  std::vector<std::unique_ptr<Event>> events;

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
    const Value& v = frame_.values[step_.inputs[i]];
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
        target = Value(t);
        return target.tensor();
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
    if (slot >= 0) return &frame_.values[slot];
    return frame_.request.parent ? frame_.request.parent->OuterScopeValue(name) : nullptr;
  }
  bool terminate_requested() const override {
    return frame_.request.options != nullptr && frame_.request.options->terminate.load();
  }
  bool SetByKernel(size_t i) const { return i < set_by_kernel_.size() && set_by_kernel_[i]; }
  const RunRequest& request() const { return frame_.request; }

 private:
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
  if (stream == nullptr) SynchronizeStreams(frame);  // copies between two devices: both sides must be idle
  frame.values[step.outputs[0]] = CopyValue(frame.values[step.inputs[0]], frame.AllocatorOf(step), step.transfer, stream);
}

}  // namespace

const RunRequest* RequestOf(const KernelContext& ctx) {
  const auto* step = dynamic_cast<const StepContext*>(&ctx);
  return step != nullptr ? &step->request() : nullptr;
}

Value CopyValueTo(const Value& value, const MemoryInfo& dst, const PlanServices& services, bool wait) {
  if (value.is_none()) return value;
  const MemoryInfo src = value.is_tensor() ? value.tensor().memory_info()
                                           : (value.sequence().empty() ? dst : value.sequence()[0].memory_info());
  if (src == dst) return value;
  DataTransfer* transfer = services.find_transfer(src, dst);
  Stream* src_stream = services.stream_for(src);
  Stream* dst_stream = services.stream_for(dst);
  Stream* stream = services.copy_stream_for(src, dst);
  if (stream == nullptr) {  // between two devices (or host memory only): synchronous, once the source is complete
    if (src_stream != nullptr) src_stream->Synchronize();
    return CopyValue(value, services.allocator_for(dst), transfer, nullptr);
  }
  // The copy waits for the source's producer; the destination's compute stream (its readers) waits for the copy.
  if (src_stream != nullptr && src_stream != stream) OrderAfter(*src_stream, *stream);
  Value copied = CopyValue(value, services.allocator_on(dst, stream), transfer, stream);
  if (dst_stream != nullptr && dst_stream != stream) OrderAfter(*stream, *dst_stream);
  if (wait) {
    std::unique_ptr<Event> done = stream->CreateEvent();
    done->Record(*stream);
    done->Synchronize();
  }
  return copied;
}

std::vector<Value> ExecutePlan(const ExecutionPlan& plan, RunRequest& request, const PlanServices& services) {
  Frame frame{plan, request, services, std::vector<Value>(plan.slots.size()), {}};
  frame.events.resize(plan.steps.size());
  for (size_t s = 0; s < plan.slots.size(); ++s)
    if (!plan.slots[s].constant.is_none()) frame.values[s] = plan.slots[s].constant;
  for (size_t i = 0; i < plan.input_slots.size(); ++i) {
    const int slot = plan.input_slots[i];
    frame.values[slot] = CopyValueTo(request.inputs[i], plan.slots[slot].location, services, false);
  }
  for (size_t i = 0; i < plan.outer_slots.size() && i < request.outer.size(); ++i) {
    const int slot = plan.outer_slots[i];
    frame.values[slot] = CopyValueTo(request.outer[i], plan.slots[slot].location, services, true);
  }
  for (size_t t = 0; t < plan.steps.size(); ++t) {
    const PlanStep& step = plan.steps[t];
    if (request.options != nullptr && request.options->terminate.load())
      Fail(ErrorCode::kTerminated, "run terminated by RunOptions::terminate before ", step.label);
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
  for (int slot : plan.output_slots) outputs.push_back(frame.values[slot]);
  if (request.retained_frame != nullptr) *request.retained_frame = std::move(frame.values);
  return outputs;
}

}  // namespace tessera
