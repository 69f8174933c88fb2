// ExecutionProvider: one EP instance serving one session on one EP device.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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
  kEpStepHooks = 1u << 2,    // OnStepBegin / OnStepEnd are called around each of its kernel steps
  kEpProfiling = 1u << 3,    // CreateDeviceTimer measures its steps on the device in profiled runs
  // The session may give each concurrent run streams of its own: CreateStream and CreateCopyStream may be called
  // again while the session runs, each stream independent of the others, and kernels must work on any of them
  // (per-stream library handles and scratch; data a kernel caches on one stream is complete before another
  // reads it). The EP's allocator(kDefault) must order reuse across streams (ArenaOptions::stream_fences).
  // Without the flag every run of a session queues its work on the one stream the EP gave.
  kEpRunStreams = 1u << 4,
};

// Device time of the steps of one profiled run on one stream (kEpProfiling), e.g. CUDA events.
//
//   timer = ep.CreateDeviceTimer(stream);  // queues the run's start marker on `stream`
//   for each step of the run on `stream`:   // host thread of the run, in plan order
//     timer->BeginStep(); <the step queues its work>; timer->EndStep();
//   <the run's streams are synchronized>
//   std::vector<DeviceTimer::Interval> times = timer->Resolve();
//
// BeginStep/EndStep queue markers on the stream and return without waiting; each pair is one step.
// Resolve returns one Interval per pair, in call order, in microseconds since the start marker was
// reached on the device. It is called once, after the stream has passed every marker (it may block
// until it has). A step whose markers could not be recorded (e.g. while the stream is being captured
// into a graph: markers must never enter a capture) has an Interval that is not measured(). Runs on one
// stream from several threads at once interleave their work, so a step's interval may include work of
// a concurrent run. The session places the intervals on its host timeline as early as they can lie:
// no step starts on the device before its work was queued on the host.
class DeviceTimer {
 public:
  struct Interval {
    double begin_us = -1, end_us = -1;
    bool measured() const { return begin_us >= 0 && end_us >= begin_us; }
  };
  virtual ~DeviceTimer() = default;
  virtual void BeginStep() = 0;
  virtual void EndStep() = 0;
  virtual std::vector<Interval> Resolve() = 0;
  // Name of the device timeline in traces, e.g. "CUDA stream 0x5581c0a0 (GPU 0)".
  virtual std::string track_name() const = 0;
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
  // A compute stream for the session: a new stream (or nullptr for a synchronous EP such as the CPU). Called once
  // per session, and once more per concurrent run's stream set when the EP advertises kEpRunStreams.
  virtual std::unique_ptr<Stream> CreateStream() = 0;
  // A stream for copies between this EP's memory and host memory, or nullptr (the default) to queue them on
  // the compute stream. The session creates two, one per direction, and orders them with the compute
  // stream by events. An EP that returns one must give an allocator(kDefault) that orders reuse across
  // streams (Arena with ArenaOptions::stream_fences), since copies then allocate on another stream.
  virtual std::unique_ptr<Stream> CreateCopyStream() { return nullptr; }

  // Nodes (indices into graph.nodes, among `unassigned`) this EP will run. The default takes every
  // node that has a kernel in kernels().
  virtual std::vector<size_t> GetCapability(const Graph& graph, const std::set<size_t>& unassigned) const;

  // The channel-inner layout its kernels run the convolution `conv` fastest in (element types and shapes from
  // `graph`), for the nchwc_layout pass, which keeps activations in it between convolutions when the EP also has
  // the ai.tessera Nchwc* kernels: 0 for NHWC, 8 or 16 for blocks of that many channels; nullopt keeps NCHW.
  virtual std::optional<int64_t> PreferredChannelBlock(const Node& /*conv*/, const Graph& /*graph*/) const {
    return std::nullopt;
  }

  // Whether rewriting standard ops into this EP's fused op `op_type` (domain) pays: the fusion passes ask it before
  // they fuse for this EP. An EP may keep a fused kernel for graphs that contain the op while its unfused kernels
  // run the pattern faster (the CPU EP's ai.tessera::Attention). Default: yes.
  virtual bool PrefersFusion(const std::string& /*op_type*/, const std::string& /*domain*/) const { return true; }

  virtual uint32_t capability_flags() const { return 0; }
  // kEpRunHooks: called on the thread of each run, before its first step and after its last (also when
  // the run fails); `stream` is the session's stream for this EP (nullptr if none), `run_tag` is
  // RunOptions::tag. Runs replaying a captured graph call them too.
  virtual void OnRunStart(Stream* /*stream*/, const std::string& /*run_tag*/) {}
  virtual void OnRunEnd(Stream* /*stream*/) {}
  // kEpStepHooks: called on the run's thread just before and after each kernel step of this EP queues
  // its work (not around copies), properly nested inside OnRunStart/OnRunEnd; OnStepEnd is called
  // also when the step throws. For tracing tools (NVTX ranges, ...): keep them cheap.
  virtual void OnStepBegin(const Node& /*node*/, Stream* /*stream*/) {}
  virtual void OnStepEnd(const Node& /*node*/, Stream* /*stream*/) {}
  // kEpProfiling: a timer for one profiled run on `stream` (see DeviceTimer); nullptr to skip this run.
  virtual std::unique_ptr<DeviceTimer> CreateDeviceTimer(Stream& /*stream*/) { return nullptr; }

  // Graph capture (kEpGraphCapture), e.g. CUDA graphs. When graph_capture_enabled() (an EP option such
  // as enable_cuda_graph), the session checks at creation that the whole plan runs on this EP's stream,
  // then for IoBinding runs: after a warm-up run it calls BeginCapture, queues one complete run on
  // `stream` (recorded, not executed), calls EndCapture, and from then on calls ReplayGraph instead of
  // running the plan. `key` is RunOptions config "gpu_graph_id" (several graphs per session). The session
  // keeps every buffer the recorded work touches alive; inputs must stay at the captured addresses.
  // Host outputs of this EP's kernels (KernelDef::host_outputs, e.g. Shape) must depend only on shapes and
  // host inputs: the session lets CPU nodes that compute from them alone run during the capture only.
  virtual bool graph_capture_enabled() const { return false; }
  virtual void BeginCapture(Stream& /*stream*/, int /*key*/) {}
  virtual void EndCapture(Stream& /*stream*/, int /*key*/) {}
  virtual void ReplayGraph(Stream& /*stream*/, int /*key*/) {}
  // Automatic graphs (kEpGraphCapture, graph_capture_enabled() false): the session captures and replays whole
  // runs by itself, for Run(feeds) and for IoBinding runs at any address, when the plan allows it (docs/
  // ARCHITECTURE.md, "Automatic graphs"). It copies feeds into buffers it owns, whose addresses the graph holds,
  // and outputs out of buffers it owns; one graph per input signature and stream set, each captured on the
  // set's compute stream of this EP (keys chosen by the session), at most automatic_graph_limit() per set.
  // ReleaseGraph destroys a graph the session evicts (its replays have completed).
  virtual bool automatic_graphs_enabled() const { return false; }
  virtual size_t automatic_graph_limit() const { return 8; }
  virtual void ReleaseGraph(int /*key*/) {}
  // Called once per session at creation, after the kernels are created and before any run (the preparation runs
  // included): whether the session will capture this EP's runs and replay them as whole-run graphs (explicit
  // capture, or automatic graphs for a plan that allows them). A replayed step costs no host time, so kernels may
  // then choose their implementations by device time alone; with `replayed` false every run executes the kernels
  // (host time per step counts). Until the call (kernel creation) an EP may assume
  // graph_capture_enabled() || automatic_graphs_enabled(). Runs before a capture (a signature's warm-up), runs
  // opting out (RunOptions gpu_graph_id = -1) and signatures whose capture failed still run eagerly.
  virtual void SetRunsReplayed(bool /*replayed*/) {}
  // Called once per session when its creation is done (after the preparation runs, before the constructor
  // returns): an EP finishes background work of its own that the caller's runs should not compete with (the
  // CUDA EP's library warm-up). Not called when creation fails.
  virtual void OnSessionReady() {}
};

}  // namespace tessera
