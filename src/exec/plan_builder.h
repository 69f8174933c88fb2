// Builds an ExecutionPlan from a partitioned, topologically sorted graph: creates kernels, places
// every value, inserts copy steps where a value crosses memory spaces (constants are copied once,
// here), decides stream waits and computes liveness.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "exec/execution_plan.h"

namespace tessera {

// What the plan builder needs from the session.
struct PlanServices {
  // Session-wide settings handed to every kernel at creation (KernelInfo::session_settings).
  KernelSessionSettings kernel_settings;
  // The transfer that copies src -> dst; throws kNotImplemented when none can.
  std::function<DataTransfer*(const MemoryInfo& src, const MemoryInfo& dst)> find_transfer;
  // The allocator for a memory space the session uses.
  std::function<AllocatorPtr(const MemoryInfo& info)> allocator_for;
  // The session's compute stream for work in a memory space (nullptr for host memory / synchronous EPs).
  std::function<Stream*(const MemoryInfo& info)> stream_for;
  // The stream that runs copies from `src` to `dst` memory: between host and a device, the device's copy
  // stream for that direction when its EP has them, else its compute stream; nullptr between two devices
  // (such copies run synchronously once both are idle) or when neither side has a stream.
  std::function<Stream*(const MemoryInfo& src, const MemoryInfo& dst)> copy_stream_for;
  // The allocator for memory `info` to use for work queued on `use`: blocks come ordered after their last
  // use (StreamAllocator), which the compute stream of `info` orders. allocator_for(info) when `use` is null.
  std::function<AllocatorPtr(const MemoryInfo& info, Stream* use)> allocator_on;
  // Host memory that the device of memory `info` reads and writes directly (pinned memory), used to stage
  // small copies between pageable host memory and that device; nullopt when it has none (or for host memory).
  // May be left empty: nothing is staged.
  std::function<std::optional<MemoryInfo>(const MemoryInfo& info)> staging_memory_for;
  // Compiles a subgraph attribute of `parent` (If/Loop/Scan bodies).
  std::function<std::unique_ptr<SubgraphRunner>(const Graph& subgraph, const Node& parent)> compile_subgraph;
};

// `assignment[i]` is the EP chosen for graph.nodes[i]. `outer_scope` lists names a subgraph reads from
// enclosing graphs.
ExecutionPlan BuildExecutionPlan(const Graph& graph, const std::vector<ExecutionProvider*>& assignment,
                                 const PlanServices& services, const std::set<std::string>& outer_scope = {});

}  // namespace tessera
