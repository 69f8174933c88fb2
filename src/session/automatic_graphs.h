// Automatic graphs: a session that captures and replays whole runs by itself, for Run(feeds) and for IoBinding
// runs at any address (ExecutionProvider::automatic_graphs_enabled, e.g. the CUDA EP's automatic_cuda_graphs).
//
// A graph holds fixed addresses, so the session owns them. Per stream set and input signature (each input's
// element type and shape, and whether it is fed from host memory or from the EP's memory; plus whether the run
// returns outputs in host memory) one Instance holds:
//   - one device block with every input (views handed to the plan), and, for the inputs fed from host memory,
//     a pinned (host-accessible) block of the same layout: a run memcpys host feeds into it, and the graph's
//     first node copies it to the device block; device feeds are copied into their views before the replay;
//   - every value of the captured run (kept alive: their addresses are in the graph);
//   - for runs returning host outputs (Run(feeds)): a device block the kernels write the outputs into and a
//     pinned block the graph's last node copies it to; the run waits for the replay and memcpys the outputs out.
//     Runs keeping outputs on the device (IoBinding) copy them out of the graph's buffers after the replay.
// The first run of a signature on a set runs eagerly (its kernels prepare: algorithm searches, handles,
// workspaces; the caller tells WarmedUp its outputs' types and shapes); the second is captured and replayed;
// later runs replay. At most `limit` instances per set: the least recently used one is released (after its
// set's streams are idle). A capture that fails (a kernel made a call a graph cannot record, out of memory) is
// logged; the signature runs eagerly after two failures. Runs sharing a stream set (more threads than sets)
// take the set one at a time (Hold), from the first copy in to the last copy out queued, eager runs included:
// a capture records everything queued on the set's stream, so nothing else may queue there meanwhile. Every
// block a captured run allocates (values, and kernel temporaries freed before the kernel returns) comes from a
// RetainingAllocator view and stays out of circulation until the graph is released.
//
// Early downloads (`early_downloads`, session config "session.automatic_graph_early_downloads", on by default): in
// a Run(feeds) capture, an output that its step writes in place into the output block goes down to the pinned
// block on a side stream (the set's device -> host copy stream, else one the set keeps for its captures) as soon as
// that step has queued, so in the graph it is a branch beside the steps after it; the side stream joins the
// compute stream before the capture ends, and the run still waits for the whole replay. A decoder's key/value
// caches (GPT-2 with a past: 1.3 MB of its 1.5 MB of outputs) then cross the bus while the later layers compute.
//
// Uploads in pieces (`upload_pieces`, session config "session.automatic_graph_upload_pieces", default 3): the pinned
// block holds the host-fed inputs in the order of their first reading step, cut into up to that many pieces whose
// sizes double (1/7, 2/7, 4/7 of the bytes for three; an input is never split; no piece under 64 KiB). The first
// piece goes up on the compute stream before the first step; the others follow one after another on a side stream
// (the set's host -> device copy stream, else one the set keeps for its captures), and the first step that reads an
// input of piece k waits for piece k alone. A decoder's past key/values (GPT-2: 1.2 MB, ~55 us on the bus) then cross while the
// first layers compute. One wait per piece: per-input uploads, each waited for by its first reader, measured
// slower (docs/CUDA.md, "Host tensors through automatic graphs"). "1" uploads everything before the first step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "exec/execution_plan.h"
#include "session/stream_pool.h"
#include "tessera/ep/execution_provider.h"
#include "tessera/session_options.h"

namespace tessera {

class AutomaticGraphs {
 public:
  enum class Outputs {
    kHost,    // Run(feeds): the run ends with every output in host memory
    kDevice,  // IoBinding: outputs stay in the graph's buffers; the caller copies them where they are bound
  };

  // `plan` passed GraphCaptureBlocker for `ep` and every input slot is in ep's memory; `staging` is ep's
  // host-accessible memory. `limit` >= 1.
  AutomaticGraphs(const ExecutionPlan& plan, ExecutionProvider& ep, const MemoryInfo& staging,
                  const ThreadPool& threads, size_t limit, bool early_downloads = true, int upload_pieces = 3);
  // Releases the graphs. The session's streams must be idle.
  ~AutomaticGraphs();
  AutomaticGraphs(const AutomaticGraphs&) = delete;
  AutomaticGraphs& operator=(const AutomaticGraphs&) = delete;

  // Held by a run on `set` (graph or eager) from its first queued work to its last: Run and WarmedUp need it.
  std::unique_lock<std::mutex> Hold(const StreamPool::Set& set);

  // Whether a step of `plan` reads its input `i`, or the input is also an output. Inputs nobody reads (a model's
  // unused inputs) may sit in any memory: a captured run ignores them.
  static bool Reads(const ExecutionPlan& plan, size_t i);

  // Whether `inputs` can go through a graph at all (tensors in host-readable memory or in ep's memory).
  bool Accepts(const std::vector<Value>& inputs) const;

  // Runs `inputs` through the set's graph for their signature (capturing it when the signature is warm), or
  // returns false when the caller must run eagerly (the signature's first run on this set, or its captures
  // failed). On true: kHost: `outputs` holds the outputs `wanted` in host memory and the run is complete.
  // kDevice: `copy_out` was called with every output as the graph's own buffer (in ep's memory, valid until
  // the next run on the set) while no other run could queue on the set; it must queue its copies on the set's
  // streams; `outputs` is left empty.
  bool Run(const StreamPool::Set& set, const std::vector<Value>& inputs, Outputs mode, const std::vector<size_t>& wanted,
           const RunOptions& options, std::vector<Value>& outputs,
           const std::function<void(const std::vector<Value>&)>& copy_out);

  // After the eager run of a signature on `set`: its outputs (as produced, before any copy) give the graph's
  // output layout.
  void WarmedUp(const StreamPool::Set& set, const std::vector<Value>& inputs, Outputs mode,
                const std::vector<Value>& produced);

  // Counters (tests, logs): graphs captured, runs replayed, graphs released by the limit.
  size_t captures() const { return captures_.load(); }
  size_t replays() const { return replays_.load(); }
  size_t evictions() const { return evictions_.load(); }

 private:
  using Signature = std::vector<int64_t>;
  struct Instance;
  class EarlyDownloads;
  class LateUploads;
  class BothObservers;
  struct Warmth {
    bool warm = false;
    int failures = 0;
    std::vector<std::pair<DataType, Shape>> outputs;  // from the warm-up
  };
  struct SetGraphs {
    std::mutex mutex;  // Hold
    std::map<Signature, Warmth> seen;
    std::list<std::unique_ptr<Instance>> instances;  // most recently used first
    std::unique_ptr<Stream> capture_download;  // early downloads on a set without a device -> host copy stream
    std::unique_ptr<Stream> capture_upload;    // late upload pieces on a set without a host -> device copy stream
  };

  Signature SignatureOf(const std::vector<Value>& inputs, Outputs mode) const;
  SetGraphs& GraphsOf(const StreamPool::Set& set);
  std::unique_ptr<Instance> Capture(const StreamPool::Set& set, SetGraphs& graphs, const Signature& signature,
                                    const Warmth& warmth,
                                    const std::vector<Value>& inputs, Outputs mode, const RunOptions& options);
  void Replay(const StreamPool::Set& set, Instance& instance, const std::vector<Value>& inputs);
  void Release(const StreamPool::Set& set, Instance& instance);

  // Whether a run reads input i (Reads; inputs past the plan's are passed on as they are).
  bool IsRead(size_t i) const { return i >= read_.size() || read_[i]; }

  const ExecutionPlan& plan_;
  std::vector<bool> read_;  // per plan input: Reads (unused inputs are neither copied nor handed to the plan)
  ExecutionProvider& ep_;
  const MemoryInfo staging_;
  const ThreadPool& threads_;
  const size_t limit_;
  const bool early_downloads_;
  const int upload_pieces_;  // >= 1
  std::vector<size_t> first_use_;  // per plan input: the index of the first step that reads it (steps.size(): none)
  std::mutex sets_mutex_;
  std::map<const StreamPool::Set*, std::unique_ptr<SetGraphs>> sets_;
  std::atomic<int> next_key_{0};
  std::atomic<size_t> captures_{0}, replays_{0}, evictions_{0};
};

}  // namespace tessera
