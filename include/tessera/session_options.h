// Options for creating a session and for a single run.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/environment.h"
#include "tessera/tensor.h"

namespace tessera {

// Picks EP devices when SessionOptions::providers is empty.
enum class EpSelectionPolicy {
  kDefault,         // CPU only
  kPreferCpu,       // CPU first, then others
  kPreferGpu,       // GPUs first, then NPUs, then CPU
  kPreferNpu,       // NPUs first, then GPUs, then CPU
  kMaxPerformance,  // GPU > NPU > CPU
  kMaxEfficiency,   // NPU > CPU > GPU
};
EpSelectionPolicy ParseEpSelectionPolicy(const std::string& name);  // "prefer_gpu", ...

enum class OptimizationLevel { kNone = 0, kBasic = 1, kExtended = 2, kAll = 99 };

struct ProviderRequest {
  std::string ep_name;         // "CPUExecutionProvider", "CUDAExecutionProvider", a plugin's EP type
  ProviderOptions options;     // provider options, validated by the EP
  int device_index = 0;        // which of this EP's EP devices (in GetEpDevices order)
};

// Stream sets a session creates at most for concurrent runs when SessionOptions::stream_sets is 0.
constexpr int kDefaultStreamSets = 8;
// Device memory each compute stream of a session keeps for reuse when SessionOptions::stream_cache_bytes is -1.
constexpr int64_t kDefaultStreamCacheBytes = int64_t{64} << 20;

struct EpDevice;

// Chooses a session's EP devices (ONNX Runtime's EP selection delegate): given every EP device of the environment
// (the CPU EP's last), the model's metadata (its metadata_props, plus producer_name, producer_version, domain,
// graph_name and model_version where the model sets them), runtime metadata (none yet) and the most it may pick, it
// returns the devices to use in priority order. Each must be one of those given; at least one, at most
// max_selections. An exception it throws fails session creation with its message.
using EpSelectionDelegate = std::function<std::vector<const EpDevice*>(
    const std::vector<const EpDevice*>& devices, const std::map<std::string, std::string>& model_metadata,
    const std::map<std::string, std::string>& runtime_metadata, size_t max_selections)>;

// Where an initializer's bytes live outside a model file: `path` (a file), `offset` and `size` in bytes there.
struct ExternalInitializerLocation {
  std::string path;
  int64_t offset = 0;
  int64_t size = 0;
};

struct SessionOptions {
  // EPs in priority order; when empty, `policy` chooses. The CPU EP is always added last as the
  // fallback unless disable_cpu_fallback is set.
  std::vector<ProviderRequest> providers;
  EpSelectionPolicy policy = EpSelectionPolicy::kDefault;
  // When set (and `providers` is empty): chooses the EP devices instead of `policy`, after the model is read.
  EpSelectionDelegate selection_delegate;
  bool disable_cpu_fallback = false;
  int intra_op_threads = 0;  // 0 = one per core
  // false: run on the Environment's global thread pools (Environment::SetGlobalThreadPools; intra_op_threads is
  // then ignored). An Environment with global pools accepts only such sessions, as ONNX Runtime does.
  bool use_per_session_threads = true;
  OptimizationLevel optimization_level = OptimizationLevel::kAll;
  // When set, session creation writes the optimized graph there as an ONNX model (ONNX Runtime's
  // optimized_model_filepath). At optimization level kAll it holds Tessera's own fused ops (domain ai.tessera) chosen
  // for this session's EPs: load it with the same providers, or save at kExtended for a file any runtime reads.
  // Config "session.optimized_model_external_initializers_file_name" (a file name beside the model) puts the
  // initializers of at least "session.optimized_model_external_initializers_min_size_in_bytes" bytes (default 1024)
  // there.
  std::string optimized_model_filepath;
  // When set, writing optimized_model_filepath asks it where each initializer goes (ONNX Runtime's compile API
  // initializer-location function), for every initializer except string tensors, and the config keys above are
  // not consulted. `value` is the initializer as the optimized graph holds it (a host tensor); `original` is where
  // the loaded model kept it, when it was external data that the optimizer left as loaded (path absolute), else
  // nullptr. Returning a location writes the initializer as external data there: the callback has stored the
  // bytes (or they already are where `original` says); `size` must equal the tensor's bytes. A relative path is
  // written as given (ONNX resolves it against the model's folder); an absolute one is written relative to the
  // folder of optimized_model_filepath. std::nullopt writes the initializer inline. What the callback throws fails
  // session creation.
  std::function<std::optional<ExternalInitializerLocation>(const std::string& name, const Tensor& value,
                                                           const ExternalInitializerLocation* original)>
      optimized_model_initializer_location;
  LogLevel log_level = LogLevel::kWarning;
  std::string log_id;
  // Values for symbolic dims of the graph inputs, by symbol name (e.g. {"batch", 1}): each input dim named so
  // becomes that size, as ONNX Runtime's AddFreeDimensionOverrideByName does. Feeds must then match; a model
  // whose inputs all become static is prepared at creation (config "session.prepare_static_shapes").
  std::map<std::string, int64_t> free_dimension_overrides;
  // The same by dimension denotation (ONNX Runtime's AddFreeDimensionOverride): every graph input dim that is not
  // a fixed size and carries this denotation (e.g. "DATA_BATCH") becomes that size.
  std::map<std::string, int64_t> free_dimension_overrides_by_denotation;
  // Values that replace the model's initializers of those names (ONNX Runtime's AddInitializer): each must be a
  // host tensor of the initializer's type and shape; the session shares its memory (no copy on the CPU), so the
  // caller must not change it while the session lives. Unknown names and mismatches fail session creation.
  std::map<std::string, Tensor> initializers;
  // Data of initializers the model stores as external data, supplied by the application instead of files (ONNX
  // Runtime's AddExternalInitializers and AddExternalInitializersFromFilesInMemory): by initializer name, a host
  // tensor of its type and shape (shared, not copied); by external data location (the file name the model gives),
  // the file's bytes. The files need not exist, and models loaded from memory may use them too.
  std::map<std::string, Tensor> external_initializers;
  std::map<std::string, std::shared_ptr<const std::string>> external_initializer_files;
  // Folders besides the model's own from which its external data files may be read. A model file's data must
  // otherwise resolve (symbolic links followed) inside the folder of the path it was loaded from or of the file that
  // path links to (a Hugging Face hub cache's snapshot links); a location leading elsewhere ("../data/w.bin", a link
  // out of the folder) fails with "external data path validation failed" (ONNX Runtime's whitelisted_data_folders).
  std::vector<std::string> external_data_folders;
  // Only algorithms whose results are the same bit for bit run after run (ONNX Runtime's
  // use_deterministic_compute): EPs leave out the candidates their libraries mark nondeterministic (the CUDA EP:
  // cuDNN convolution engines and algorithms so marked). Kernels see it as KernelInfo::session_settings().
  bool use_deterministic_compute = false;
  // Free-form settings. Known keys:
  //   "session.use_env_allocators" = "1": allocate from the Environment's shared allocators where one
  //   exists for an EP's memory (instead of the EP's own allocator, which honours its provider options).
  //   "session.prepare_static_shapes" = "1" / "0": run the model on zeros at creation when every input shape
  //   is static, so that the first Run costs about a steady one (default "1"); CPU-only sessions run it dry where
  //   the graph allows (convolutions prepare without computing); "full" always runs it in full. See
  //   docs/ARCHITECTURE.md.
  //   "session.float16_in_float32" = "1" / "0": run connected float16/bfloat16 regions that an EP computes by
  //   widening per node (the CPU EP) in float32 end to end, with Casts only where values enter and leave them
  //   (default "1", optimization level all); "0" keeps 16-bit values between nodes. docs/ARCHITECTURE.md.
  //   "session.automatic_graph_upload_pieces" = "1" to "8": how many pieces the host feeds of a replayed Run(feeds)
  //   go up in, each waited for by the first step that reads it (default "3"; "1": one copy before the first step;
  //   docs/ARCHITECTURE.md, "Automatic graphs"). "session.automatic_graph_early_downloads" = "0": every output goes
  //   down after the last step (default: each as soon as its step has written it).
  // Unknown keys are kept and ignored.
  std::map<std::string, std::string> config;
  // Profiling (docs/PROFILING.md): a Chrome-trace JSON file "<profile_file_prefix>_<date-time>.json" with
  // the phases of session creation, every run and every plan step (host time; device time on EPs with
  // kEpProfiling). Written by Session::EndProfiling, or when the session is destroyed.
  bool enable_profiling = false;
  std::string profile_file_prefix = "tessera_profile";
  // Concurrent runs on EPs with streams (docs/ARCHITECTURE.md, "Concurrent runs"): each run in flight takes a
  // set of device streams of its own (a compute stream and the copy streams per device, with the EP's library
  // handles and scratch memory on them), so that runs from several threads overlap on the device. At most this
  // many sets are created, on demand (0 = kDefaultStreamSets); further concurrent runs share the least busy set.
  // 1 keeps every run on one set of streams. Sessions with graph capture, or with an EP that does not allow
  // several streams (kEpRunStreams; e.g. the CUDA EP with user_compute_stream), always use one set.
  int stream_sets = 0;
  // Same-stream reuse (docs/ARCHITECTURE.md, "Memory"): device blocks (up to 16 MiB each) that kernels free on a
  // compute stream are kept for that stream's next allocations of the same size, so that a run in steady state
  // allocates without the shared arena's lock or a device event per free. Up to this many bytes per compute stream
  // (-1 = kDefaultStreamCacheBytes, 0 = off); the memory stays reserved in the arena until the session ends or an
  // allocation on that stream finds the arena full.
  int64_t stream_cache_bytes = -1;

  SessionOptions& AddProvider(std::string ep_name, ProviderOptions options = {});
};

struct RunOptions {
  std::string tag;                  // shown in logs
  LogLevel log_level = LogLevel::kWarning;
  // When false, Run returns once all work is queued on the device streams; outputs on a device are
  // valid after IoBinding::SynchronizeOutputs (or the session's streams reach the run's end).
  bool synchronize = true;
  // Set from any thread to cancel runs using these options; they throw Error(kTerminated).
  std::atomic<bool> terminate{false};
  // A deadline for each run, in milliseconds from its start (0: none). A run past it stops with Error(kTerminated)
  // naming the limit: checked before every step and every Loop/Scan iteration (a kernel already running finishes
  // first; on a device, work already queued completes). The session stays usable.
  int64_t timeout_ms = 0;
  // The caller's stream (nullptr: none), for chaining the application's own device work with runs without the host
  // waiting: the run's device work starts after everything queued on `stream` before Run, and work queued on
  // `stream` after Run returns starts after the run's device work, its output copies included. The ordering is done
  // with events on the device for the run's streams of the same kind of device as `stream` (device type and
  // vendor); streams of other devices are ordered by host waits. Works with synchronize = false (Run returns once
  // the work is queued) and with Run(feeds). See docs/PIPELINES.md.
  Stream* stream = nullptr;
  std::map<std::string, std::string> config;

  RunOptions() = default;
  RunOptions(const RunOptions& o)
      : tag(o.tag),
        log_level(o.log_level),
        synchronize(o.synchronize),
        terminate(o.terminate.load()),
        timeout_ms(o.timeout_ms),
        stream(o.stream),
        config(o.config) {}
};

}  // namespace tessera
