// Session: one loaded, optimized, partitioned model ready to run.
//
//   tessera::Environment env;
//   tessera::Session session(env, "resnet50.onnx", tessera::SessionOptions{});
//   auto outputs = session.Run({{"input", tessera::Tensor::FromVector<float>(...)}});
//
// Creation: load -> optimize -> partition (EPs in priority order, CPU fallback) -> insert copies ->
// plan -> create kernels. A model the session cannot run fails here with kNotImplemented naming the
// op, its domain and opset, and the node.
//
// Run is safe to call from many threads at once. A failed run (bad input, out of memory, a kernel
// error) throws and leaves the session usable.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/environment.h"
#include "tessera/io_binding.h"
#include "tessera/session_options.h"

namespace tessera {

struct ModelMetadata {
  std::string producer_name, producer_version, domain, description, graph_name;
  int64_t version = 0;
  int64_t ir_version = 0;
  std::map<std::string, int> opsets;
  std::map<std::string, std::string> custom;
};

// A model's metadata without creating a session: the file (or bytes) is read and checked as a session reads it
// (throws what loading throws: kIo for a missing file, kInvalidModel naming the problem).
ModelMetadata ReadModelMetadata(const std::filesystem::path& model_path);
ModelMetadata ReadModelMetadata(const void* model_bytes, size_t size);

// The names of the graph optimizer's passes, in the order they run: what session config
// "session.disabled_optimizers" (comma-separated) may name.
std::vector<std::string> GraphOptimizerPassNames();

// Where each node runs, for logging, `tessera partition` and tests.
struct PartitionEntry {
  std::string node_name, op_type, ep;  // ep "" for copy steps
  std::string domain;                  // the node's operator domain ("" for ONNX's default domain)
  bool is_copy = false;
  std::string copy_from, copy_to;  // memory infos, for copy steps
};

class Session {
 public:
  Session(Environment& env, const std::filesystem::path& model_path, const SessionOptions& options);
  Session(Environment& env, const void* model_bytes, size_t size, const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  using NamedValues = std::vector<std::pair<std::string, Value>>;
  // Outputs named in `output_names` (all outputs when empty) in host memory.
  std::vector<Value> Run(const NamedValues& feeds, const std::vector<std::string>& output_names = {},
                         const RunOptions& options = RunOptions{});
  void Run(IoBinding& binding, const RunOptions& options = RunOptions{});
  IoBinding CreateIoBinding() const { return IoBinding(*this); }

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  ModelMetadata metadata() const;
  // EP types in priority order, e.g. {"TestingExecutionProvider", "CPUExecutionProvider"}.
  std::vector<std::string> providers() const;
  // The memory a model input is read from without a copy (the memory of its first consumer).
  MemoryInfo InputMemoryInfo(const std::string& input_name) const;
  const EpDevice* InputEpDevice(const std::string& input_name) const;
  // The memory a model output is produced in (Run(IoBinding) returns it there unless bound elsewhere).
  MemoryInfo OutputMemoryInfo(const std::string& output_name) const;
  // Plan order: copies of graph inputs that are read outside host memory first, then every kernel and
  // copy step.
  std::vector<PartitionEntry> Partition() const;
  // Blocks until all work queued on the session's device streams has finished.
  void Synchronize() const;
  // Gives back to the device (and the host) the memory the session reserved but no tensor uses: its compute
  // streams' same-stream caches and every arena region without a live allocation. Tensors the caller holds stay
  // valid, the session stays usable (later runs reserve again) and runs may be in flight. Returns the bytes
  // released. RunOptions::config "memory.enable_memory_arena_shrinkage" ("cpu:0;gpu:0", ONNX Runtime's key) does
  // this at the end of a run for the devices listed.
  size_t ReleaseMemory();
  // How many sets of device streams the session has created so far (see SessionOptions::stream_sets): 1 until
  // runs overlapped, up to stream_sets; 0 when no EP of the session has streams.
  size_t StreamSets() const;
  // How the session's runs use CUDA graphs (or another EP's graphs): "explicit: ..." (enable_cuda_graph: IoBinding
  // runs keyed by gpu_graph_id), "automatic: ..." (Run(feeds) and IoBinding runs are captured and replayed by the
  // session, see docs/ARCHITECTURE.md "Automatic graphs"), or "eager: <why no graph is used>", e.g. a node with
  // control flow, a CPU node between device nodes, automatic graphs turned off by a provider option.
  std::string GraphStatus() const;
  // Automatic graphs: graphs captured and runs replayed so far (0 when not automatic).
  size_t AutomaticGraphCaptures() const;
  size_t AutomaticGraphReplays() const;
  // Profiling (SessionOptions::enable_profiling): waits for the session's streams, writes the profile and
  // returns its path; profiling stops. Returns "" when profiling is off or already ended. Throws kIo
  // when the file cannot be written. A session never ended writes its profile when destroyed.
  std::string EndProfiling();
  // When profiling started (session creation), in nanoseconds since the Unix epoch; 0 when not profiling.
  uint64_t ProfilingStartTimeNs() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
