#include "session/run_tracer.h"

#include <algorithm>

namespace tessera {

namespace {

bool Contains(const std::vector<ExecutionProvider*>& eps, const ExecutionProvider* ep) {
  return std::find(eps.begin(), eps.end(), ep) != eps.end();
}

// {"float":[1,3,224,224]} for a tensor, {"sequence":[length]} for a sequence, {} for none.
std::string TypeShape(const Value& value) {
  if (value.is_tensor()) {
    const Tensor& t = value.tensor();
    std::string out = "{\"";
    out += DataTypeName(t.type());
    out += "\":[";
    for (size_t i = 0; i < t.shape().rank(); ++i) {
      if (i > 0) out += ',';
      out += std::to_string(t.shape()[i]);
    }
    out += "]}";
    return out;
  }
  if (value.is_sequence()) {
    std::string out = "{\"sequence\":[";
    out += std::to_string(value.sequence().size());
    out += "]}";
    return out;
  }
  return "{}";
}

// The frame holds what the run produced and was fed; constant slots are read from the plan (executor.cc).
std::string TypeShapes(const std::vector<int>& slots, const std::vector<Value>& frame, const ExecutionPlan& plan) {
  std::string out = "[";
  for (size_t i = 0; i < slots.size(); ++i) {
    if (i > 0) out += ",";
    if (slots[i] < 0) {
      out += "{}";
      continue;
    }
    const Value& v = frame[slots[i]];
    out += TypeShape(v.is_none() ? plan.slots[slots[i]].constant : v);
  }
  return out + "]";
}

}  // namespace

RunTracer::RunTracer(const RunTracing& tracing, const std::string& run_tag, const RunStreams* streams)
    : tracing_(tracing),
      run_tag_(run_tag),
      streams_(streams),
      profiler_(tracing.profiler != nullptr && tracing.profiler->active() ? tracing.profiler : nullptr),
      observes_steps_(profiler_ != nullptr || !tracing.step_hooks.empty()) {
  if (profiler_ != nullptr) run_begin_us_ = profiler_->Now();
  for (const RunTracing::EpStream& hooked : tracing_.run_hooks) hooked.ep->OnRunStart(StreamOf(hooked.stream), run_tag_);
  run_hooks_open_ = true;
  if (profiler_ == nullptr) return;
  timers_.reserve(tracing_.timed.size());  // timed_step_ points into it
  for (const RunTracing::EpStream& timed : tracing_.timed) {
    const double start_us = profiler_->Now();
    Stream* stream = StreamOf(timed.stream);
    if (std::unique_ptr<DeviceTimer> timer = timed.ep->CreateDeviceTimer(*stream))
      timers_.push_back({stream, DeviceRun{std::move(timer), start_us, {}}});
  }
}

RunTracer::~RunTracer() {
  if (timed_step_ != nullptr) timed_step_->timer->EndStep();  // keeps the timer's markers paired
  if (hooked_step_ != nullptr) hooked_step_->ep->OnStepEnd(*hooked_step_->node, StreamOf(hooked_step_->stream));
  EndRunHooks();
}

void RunTracer::EndRunHooks() {
  if (!run_hooks_open_) return;
  run_hooks_open_ = false;
  for (auto it = tracing_.run_hooks.rbegin(); it != tracing_.run_hooks.rend(); ++it) it->ep->OnRunEnd(StreamOf(it->stream));
}

void RunTracer::BeforeStep(const PlanStep& step) {
  if (step.kind == PlanStep::Kind::kKernel && Contains(tracing_.step_hooks, step.ep)) {
    step.ep->OnStepBegin(*step.node, StreamOf(step.stream));
    hooked_step_ = &step;
  }
  if (profiler_ == nullptr) return;
  // The step's host time starts after the profiler's own bookkeeping (its name, the device timer's marker), so
  // that it measures what the step costs the host, not what profiling it costs.
  Stream* stream = step.stream != nullptr ? StreamOf(step.stream) : nullptr;
  // The device placement's bound is the host time before the begin marker is queued: the stream may reach the
  // marker before the host takes its next time.
  for (StreamTimer& t : timers_) {
    if (stream == nullptr || t.stream != stream) continue;
    t.run.steps.push_back({StepName(step), "", profiler_->Now()});
    t.run.timer->BeginStep();
    timed_step_ = &t.run;
    break;
  }
  step_begin_us_ = profiler_->Now();
}

void RunTracer::AfterStep(const PlanStep& step, const std::vector<Value>& frame) {
  if (profiler_ != nullptr) {
    const double end_us = profiler_->Now();
    std::string args = StepArgs(step, frame);
    if (timed_step_ != nullptr) {
      timed_step_->timer->EndStep();
      timed_step_->steps.back().args_json = args;
      timed_step_ = nullptr;
    }
    events_.push_back({StepName(step), "Node", step_begin_us_, end_us - step_begin_us_, Profiler::ThreadId(),
                       std::move(args)});
  }
  if (hooked_step_ != nullptr) {
    hooked_step_ = nullptr;
    step.ep->OnStepEnd(*step.node, StreamOf(step.stream));
  }
}

void RunTracer::Finish(bool synchronized) {
  if (profiler_ != nullptr) {
    const double end_us = profiler_->Now();
    const std::string args = run_tag_.empty() ? "" : "{\"tag\":" + JsonString(run_tag_) + "}";
    events_.push_back({"model_run", "Session", run_begin_us_, end_us - run_begin_us_, Profiler::ThreadId(), args});
    profiler_->Add(events_);
    for (StreamTimer& t : timers_) profiler_->AddDeviceRun(std::move(t.run), synchronized);
    timers_.clear();
  }
  EndRunHooks();
}

std::string RunTracer::StepName(const PlanStep& step) const {
  if (step.kind == PlanStep::Kind::kKernel) return step.node->name;
  return "copy " + tracing_.plan->slots[step.inputs[0]].name;
}

std::string RunTracer::StepArgs(const PlanStep& step, const std::vector<Value>& frame) const {
  std::string args;
  if (step.kind == PlanStep::Kind::kKernel) {
    args = "{\"op_type\":" + JsonString(step.node->op_type) + ",\"provider\":" + JsonString(step.ep->type());
  } else {
    const ExecutionPlan& plan = *tracing_.plan;
    args = "{\"op_type\":\"Copy\",\"provider\":\"\",\"from\":" +
           JsonString(plan.slots[step.inputs[0]].location.name) +
           ",\"to\":" + JsonString(plan.slots[step.outputs[0]].location.name);
  }
  return args + ",\"input_type_shape\":" + TypeShapes(step.inputs, frame, *tracing_.plan) +
         ",\"output_type_shape\":" + TypeShapes(step.outputs, frame, *tracing_.plan) + "}";
}

}  // namespace tessera
