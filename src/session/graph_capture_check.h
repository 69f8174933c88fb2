// Whole-run capture (enable_cuda_graph, and the automatic graphs of src/session/automatic_graphs.h): whether a
// plan can be recorded as one graph of an EP's stream, and the allocators a recorded run uses.
#pragma once

#include <string>

#include "exec/execution_plan.h"
#include "exec/run_streams.h"
#include "tessera/ep/execution_provider.h"

namespace tessera {

// "" when every step of `plan` can be recorded on `ep`'s stream, else why not, naming the node: a copy step
// (another EP's node inside the run), control flow, a value read on the host that can change between replays,
// or a CPU node that reads anything but values computed from shapes alone. CPU nodes whose inputs are all
// constants, host outputs of `ep`'s kernels (e.g. Shape) or results of other such nodes compute the same values
// on every replay of a graph captured for fixed input shapes: they run during the capture and their results stay
// baked into the graph (e.g. a Reshape's shape).
std::string GraphCaptureBlocker(const ExecutionPlan& plan, const ExecutionProvider& ep);

// The stream table for a run that is being recorded: `set_streams`' streams (none: the plan's own), and every
// allocator a step of `plan` uses mapped to a RetainingAllocator over the set's, so that no block the recorded
// work touches (values released at their last use, kernel temporaries) is handed to other work while the graph
// exists. The graph's owner keeps the returned table (its allocators) as long as the graph; `services` are the
// set's.
RunStreams RetainingStreams(const ExecutionPlan& plan, const RunStreams* set_streams, const PlanServices* services);

}  // namespace tessera
