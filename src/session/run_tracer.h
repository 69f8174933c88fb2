// RunTracer: everything that watches one run. It calls the EPs' run hooks (kEpRunHooks) and step hooks
// (kEpStepHooks), and, when the session profiles, collects the run's events: "model_run", one "Node"
// event per plan step (host time, op type, EP, input and output types and shapes) and the device times
// of the steps on streams of EPs with kEpProfiling.
//
//   RunTracer tracer(session_tracing, run_options.tag);   // OnRunStart, device timers' start markers
//   request.observer = tracer.observer();                 // nullptr when no step is watched
//   ... ExecutePlan(plan, request, services) ...
//   tracer.Finish(/*synchronized=*/true);                 // events into the profile, OnRunEnd
//
// A run that throws before Finish has its open step hook and its run hooks closed by the destructor;
// its events are dropped.
#pragma once

#include <string>
#include <vector>

#include "exec/run_observer.h"
#include "exec/run_streams.h"
#include "session/profiler.h"

namespace tessera {

// What the session decided at creation about tracing its runs.
struct RunTracing {
  struct EpStream {
    ExecutionProvider* ep;
    Stream* stream;  // the session's stream for the EP; nullptr when it has none
  };
  const ExecutionPlan* plan = nullptr;
  Profiler* profiler = nullptr;             // null when not profiling
  std::vector<EpStream> run_hooks;          // EPs with kEpRunHooks
  std::vector<ExecutionProvider*> step_hooks;  // EPs with kEpStepHooks
  std::vector<EpStream> timed;              // EPs with kEpProfiling and a stream
};

class RunTracer : public RunObserver {
 public:
  // `streams`: the run's stream set when it is not the primary (the hooks and timers see the run's streams).
  RunTracer(const RunTracing& tracing, const std::string& run_tag, const RunStreams* streams = nullptr);
  ~RunTracer() override;
  RunTracer(const RunTracer&) = delete;
  RunTracer& operator=(const RunTracer&) = delete;

  RunObserver* observer() { return observes_steps_ ? this : nullptr; }
  void BeforeStep(const PlanStep& step) override;
  void AfterStep(const PlanStep& step, const std::vector<Value>& frame) override;
  // The run succeeded. `synchronized`: its streams have finished its work (device times can be read).
  void Finish(bool synchronized);

 private:
  struct StreamTimer {
    Stream* stream;
    DeviceRun run;
  };
  std::string StepName(const PlanStep& step) const;
  std::string StepArgs(const PlanStep& step, const std::vector<Value>& frame) const;
  void EndRunHooks();

  Stream* StreamOf(Stream* plan_stream) const { return streams_ != nullptr ? streams_->Map(plan_stream) : plan_stream; }

  const RunTracing& tracing_;
  const std::string run_tag_;
  const RunStreams* streams_;
  Profiler* profiler_;  // null when this run is not profiled
  bool observes_steps_;
  bool run_hooks_open_ = false;
  double run_begin_us_ = 0;
  double step_begin_us_ = 0;
  const PlanStep* hooked_step_ = nullptr;  // the step whose OnStepBegin has no OnStepEnd yet
  DeviceRun* timed_step_ = nullptr;        // the timer whose BeginStep has no EndStep yet
  std::vector<StreamTimer> timers_;
  std::vector<TraceEvent> events_;
};

}  // namespace tessera
