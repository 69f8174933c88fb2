// ExecutionProvider: one EP instance serving one session on one EP device.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tessera/allocator.h"
#include "tessera/ep/data_transfer.h"
#include "tessera/ep/graph.h"
#include "tessera/ep/kernel.h"
#include "tessera/stream.h"

namespace tessera {

struct EpDevice;

// Optional features an EP advertises; the session calls the matching hooks only when the flag is set.
enum EpCapabilityFlags : uint32_t {
  kEpRunHooks = 1u << 0,     // OnRunStart / OnRunEnd are called around every run
  kEpGraphCapture = 1u << 1, // BeginCapture / EndCapture / ReplayGraph record and replay whole runs
};

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;
  // Registered name, e.g. "CPUExecutionProvider".
  virtual const std::string& type() const = 0;
  virtual const KernelRegistry& kernels() const = 0;
  // The memory space its kernels read inputs from and write outputs to (except host_inputs/outputs).
  virtual const MemoryInfo& memory_info() const = 0;
  // Allocator for memory_info() (device memory) and, when the device has one, for host-accessible
  // (pinned) memory; returns nullptr for a memory type it does not have.
  virtual AllocatorPtr allocator(MemoryType type) = 0;
  // Copies to and from its memory; nullptr when it only uses host memory.
  virtual DataTransfer* data_transfer() = 0;
  // A new stream for one run (or nullptr for a synchronous EP such as the CPU).
  virtual std::unique_ptr<Stream> CreateStream() = 0;

  // Nodes (indices into graph.nodes, among `unassigned`) this EP will run. The default takes every
  // node that has a kernel in kernels().
  virtual std::vector<size_t> GetCapability(const Graph& graph, const std::set<size_t>& unassigned) const;

  virtual uint32_t capability_flags() const { return 0; }
  virtual void OnRunStart(Stream* /*stream*/) {}
  virtual void OnRunEnd(Stream* /*stream*/) {}

  // Graph capture (kEpGraphCapture), e.g. CUDA graphs. When graph_capture_enabled() (an EP option such
  // as enable_cuda_graph), the session checks at creation that the whole plan runs on this EP's stream,
  // then for IoBinding runs: after a warm-up run it calls BeginCapture, queues one complete run on
  // `stream` (recorded, not executed), calls EndCapture, and from then on calls ReplayGraph instead of
  // running the plan. `key` is RunOptions config "gpu_graph_id" (several graphs per session). The session
  // keeps every buffer the recorded work touches alive; inputs must stay at the captured addresses.
  virtual bool graph_capture_enabled() const { return false; }
  virtual void BeginCapture(Stream& /*stream*/, int /*key*/) {}
  virtual void EndCapture(Stream& /*stream*/, int /*key*/) {}
  virtual void ReplayGraph(Stream& /*stream*/, int /*key*/) {}
};

}  // namespace tessera
