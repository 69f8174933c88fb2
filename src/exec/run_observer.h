// RunObserver: watches the steps of one run (profiling, EP step hooks) without the executor knowing
// what is done with them. A run without an observer pays one null check per step.
#pragma once

#include <vector>

#include "exec/execution_plan.h"

namespace tessera {

// Called on the run's thread, for every step of the plan in order (not for steps of subgraphs, which
// their If/Loop/Scan step covers). BeforeStep comes after the step's waits for its producers, right
// before it computes or queues its work; AfterStep once it has (and has recorded its event), while the
// frame still holds its inputs and outputs. AfterStep is not called when the step throws.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void BeforeStep(const PlanStep& step) = 0;
  // `frame` is the run's values, indexed by slot (step.inputs / step.outputs); constant slots are none there
  // (the plan's ExecutionPlan::slots[i].constant holds them).
  virtual void AfterStep(const PlanStep& step, const std::vector<Value>& frame) = 0;
};

}  // namespace tessera
