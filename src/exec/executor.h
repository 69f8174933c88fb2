// Executes an ExecutionPlan for one run. Each run has its own frame (one Value per slot), so any
// number of runs may execute one plan concurrently; kernels are shared and const.
#pragma once

#include <chrono>

#include <map>
#include <span>
#include <vector>

#include "exec/execution_plan.h"
#include "exec/plan_builder.h"
#include "exec/run_observer.h"
#include "exec/run_streams.h"
#include "tessera/session_options.h"

namespace tessera {

struct RunRequest {
  std::vector<Value> inputs;                // one per plan.input_slots; any memory space
  std::vector<Value> outer;                 // one per plan.outer_slots (subgraphs)
  std::map<int, Tensor> preallocated;       // output slot -> caller's tensor, written in place when it fits
  const RunOptions* options = nullptr;
  const ThreadPool* threads = nullptr;
  const KernelContext* parent = nullptr;    // the calling kernel, for subgraphs
  bool synchronize = true;                  // wait for every stream the plan used before returning
  // When set, no value is released during the run and the whole frame is moved here at the end (graph
  // capture keeps every buffer the recorded work touches; constant slots are none there, the plan holds them).
  std::vector<Value>* retained_frame = nullptr;
  RunObserver* observer = nullptr;          // profiling / EP step hooks; null when nothing watches steps
  // The run's own stream set when it is not the one the plan names (concurrent runs); `services` passed to
  // ExecutePlan must then be streams->services. Subgraphs called from the run's kernels inherit it.
  const RunStreams* streams = nullptr;
  // When the run must stop (RunOptions::timeout_ms from its start; time_point::max(): never). Subgraph runs inherit
  // their caller's.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // A dry preparation run (KernelContext::preparing_only): its outputs are discarded.
  bool preparing_only = false;
};

// Why `request`'s run should stop now (RunOptions::terminate, or its deadline has passed), "" when it should go on.
std::string StopReason(const RunRequest& request);

// The request of the run a kernel context belongs to (for subgraphs called from it); nullptr when the context
// was not made by ExecutePlan.
const RunRequest* RequestOf(const KernelContext& ctx);

// Runs the plan and returns the values of plan.output_slots (in the memory where they were produced).
std::vector<Value> ExecutePlan(const ExecutionPlan& plan, RunRequest& request, const PlanServices& services);

// Copies `value` (a tensor or a sequence) into memory `dst`, after the work that produces it. With `wait` the
// data has arrived when this returns; otherwise it may still be in flight on a stream, and work queued later
// on the compute stream of `dst` is ordered after it.
Value CopyValueTo(const Value& value, const MemoryInfo& dst, const PlanServices& services, bool wait);

// CopyValueTo for values[i] -> dsts[i], as one batch: the copies between two memories share one ordering of
// their streams and one DataTransfer::Copy call, and small pageable host tensors bound for a device with
// staging memory (PlanServices::staging_memory_for) are packed into one staging block and moved by one copy
// into one device block, which their device tensors share. Values already in place are returned as they are.
std::vector<Value> CopyValuesTo(std::span<const Value> values, std::span<const MemoryInfo> dsts,
                                const PlanServices& services, bool wait);

}  // namespace tessera
