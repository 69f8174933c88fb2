#include "tessera/session.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "core/logging.h"
#include "exec/executor.h"
#include "exec/plan_builder.h"
#include "graph/model_loader.h"
#include "graph/model_writer.h"
#include "graph/partitioner.h"
#include "graph/passes/contrib_attention_expansion.h"
#include "graph/passes/gradient_expansion.h"
#include "graph/passes/constant_folding.h"
#include "graph/passes/graph_optimizer.h"
#include "graph/static_shapes.h"
#include "graph/type_inference.h"
#include "providers/cpu/cpu_ep.h"
#include "session/automatic_graphs.h"
#include "session/dry_preparation.h"
#include "session/environment_impl.h"
#include "session/graph_capture_check.h"
#include "session/host_staged_transfer.h"
#include "session/profiler.h"
#include "session/run_tracer.h"
#include "session/stream_pool.h"

namespace tessera {

namespace {

// A subgraph (If/Loop/Scan body) compiled with the session's EPs.
// The session's intra-op pool: its own, or the Environment's global one (SessionOptions::use_per_session_threads).
// Counts the session as created on the Environment (SetGlobalThreadPools is refused after that).
ThreadPool ThreadsFor(Environment& env, const SessionOptions& options) {
  ++env.impl().sessions_created;
  const ThreadPool* global = env.global_intra_op_pool();
  if (!options.use_per_session_threads) {
    if (global == nullptr)
      Fail(ErrorCode::kInvalidArgument, "SessionOptions::use_per_session_threads = false needs the Environment's "
           "global thread pools (Environment::SetGlobalThreadPools; Python: tessera.set_global_thread_pool_sizes)");
    return *global;
  }
  if (global != nullptr)
    Fail(ErrorCode::kInvalidArgument, "this Environment has global thread pools (", global->num_threads(),
         " intra-op threads): sessions must set use_per_session_threads = false, as with ONNX Runtime");
  return ThreadPool(options.intra_op_threads);
}

class CompiledSubgraph : public SubgraphRunner {
 public:
  CompiledSubgraph(const Graph& graph, ExecutionPlan plan, std::vector<std::string> outer, const PlanServices& services)
      : graph_(graph), plan_(std::move(plan)), outer_(std::move(outer)), services_(services) {}
  const Graph& graph() const override { return graph_; }
  std::vector<Value> Run(KernelContext& parent, std::vector<Value> inputs) const override {
    if (inputs.size() != plan_.input_slots.size())
      Fail(ErrorCode::kInvalidArgument, parent.node().Describe(), ": subgraph '", graph_.name, "' takes ",
           plan_.input_slots.size(), " inputs, got ", inputs.size());
    RunRequest request;
    request.inputs = std::move(inputs);
    for (const std::string& name : outer_) {
      const Value* v = parent.OuterScopeValue(name);
      if (v == nullptr)
        Fail(ErrorCode::kInvalidModel, parent.node().Describe(), ": subgraph reads '", name, "', which is not defined");
      request.outer.push_back(*v);
    }
    request.threads = &parent.thread_pool();
    request.parent = &parent;
    // The body's plan names the session's primary streams, like the calling run's plan: it runs on the calling
    // run's stream set.
    const RunRequest* caller = RequestOf(parent);
    request.streams = caller != nullptr ? caller->streams : nullptr;
    if (caller != nullptr) {  // the body's steps stop with the calling run
      request.options = caller->options;
      request.deadline = caller->deadline;
    }
    const PlanServices& services = request.streams != nullptr ? *request.streams->services : services_;
    std::vector<Value> outputs = ExecutePlan(plan_, request, services);
    // The calling kernel reads the outputs (and its node's output slots live) in its own memory space.
    for (Value& v : outputs) v = CopyValueTo(v, parent.allocator()->Info(), services, true);
    return outputs;
  }

 private:
  const Graph& graph_;
  ExecutionPlan plan_;
  std::vector<std::string> outer_;
  const PlanServices& services_;
};

// Where Run(feeds) first copies an output before it lands in host memory: the staging (pinned) memory of the
// output's device for a small tensor of a device that has it, else host memory directly.
MemoryInfo StagingPlace(const Value& output, const PlanServices& services) {
  constexpr size_t kMaxStagedOutputBytes = size_t{1} << 20;
  if (!output.is_tensor() || !services.staging_memory_for) return MemoryInfo::Host();
  const Tensor& t = output.tensor();
  if (t.memory_info().IsHostReadable() || t.type() == DataType::kString || t.SizeInBytes() > kMaxStagedOutputBytes)
    return MemoryInfo::Host();
  return services.staging_memory_for(t.memory_info()).value_or(MemoryInfo::Host());
}

// SessionOptions::free_dimension_overrides: symbolic input dims named in the map take its value.
// SessionOptions::external_initializers / external_initializer_files, as the model loader takes them.
ExternalData ExternalDataOf(const SessionOptions& options) {
  ExternalData data{options.external_initializers, options.external_initializer_files, {}};
  data.folders.assign(options.external_data_folders.begin(), options.external_data_folders.end());
  return data;
}

// SessionOptions::initializers: each replaces the initializer of its name, same type and shape, host memory.
void ApplyInitializerOverrides(Graph& graph, const std::map<std::string, Tensor>& overrides) {
  for (const auto& [name, value] : overrides) {
    auto it = graph.initializers.find(name);
    if (it == graph.initializers.end())
      Fail(ErrorCode::kInvalidArgument, "SessionOptions initializer '", name, "': the model has no initializer of that name");
    if (!value.memory_info().IsHostReadable())
      Fail(ErrorCode::kInvalidArgument, "SessionOptions initializer '", name, "' is in ", value.memory_info().ToString(),
           "; it must be in host memory");
    if (value.type() != it->second.type() || value.shape() != it->second.shape())
      Fail(ErrorCode::kInvalidArgument, "SessionOptions initializer '", name, "' is ", value.Describe(),
           " but the model's is ", it->second.Describe());
    it->second = value;
  }
}

void ApplyFreeDimensionOverrides(Graph& graph, const std::map<std::string, int64_t>& by_name,
                                 const std::map<std::string, int64_t>& by_denotation) {
  std::set<std::string> used_names, used_denotations;
  const auto apply = [](Dim& dim, const std::map<std::string, int64_t>& overrides, const std::string& key,
                        std::set<std::string>& used) {
    if (key.empty()) return false;
    auto it = overrides.find(key);
    if (it == overrides.end()) return false;
    if (it->second < 0)
      Fail(ErrorCode::kInvalidArgument, "free dimension override '", it->first, "' = ", it->second,
           ": a size must be >= 0");
    dim.value = it->second;
    used.insert(it->first);
    return true;
  };
  for (ValueInfo& input : graph.inputs) {
    if (!input.shape) continue;
    for (Dim& dim : *input.shape) {
      if (dim.is_concrete()) continue;
      if (!apply(dim, by_denotation, dim.denotation, used_denotations)) apply(dim, by_name, dim.symbol, used_names);
    }
    if (auto info = graph.value_infos.find(input.name); info != graph.value_infos.end()) info->second.shape = input.shape;
  }
  for (const auto& [name, value] : by_name)
    if (!used_names.count(name))
      Log(LogLevel::kWarning, "free dimension override '", name, "': no graph input has a dim of that name");
  for (const auto& [denotation, value] : by_denotation)
    if (!used_denotations.count(denotation))
      Log(LogLevel::kWarning, "free dimension override by denotation '", denotation,
          "': no graph input has a free dim with that denotation");
}

int DevicePreference(EpSelectionPolicy policy, DeviceType type) {
  auto rank = [type](std::initializer_list<DeviceType> order) {
    int i = 0;
    for (DeviceType t : order) {
      if (t == type) return i;
      ++i;
    }
    return i;
  };
  switch (policy) {
    case EpSelectionPolicy::kPreferCpu: return rank({DeviceType::kCpu, DeviceType::kGpu, DeviceType::kNpu});
    case EpSelectionPolicy::kPreferGpu: return rank({DeviceType::kGpu, DeviceType::kNpu, DeviceType::kCpu});
    case EpSelectionPolicy::kPreferNpu: return rank({DeviceType::kNpu, DeviceType::kGpu, DeviceType::kCpu});
    case EpSelectionPolicy::kMaxPerformance: return rank({DeviceType::kGpu, DeviceType::kNpu, DeviceType::kCpu});
    case EpSelectionPolicy::kMaxEfficiency: return rank({DeviceType::kNpu, DeviceType::kCpu, DeviceType::kGpu});
    case EpSelectionPolicy::kDefault: return type == DeviceType::kCpu ? 0 : -1;
  }
  return -1;
}

}  // namespace

struct Session::Impl {
  Environment& env;
  SessionOptions options;
  std::unique_ptr<Model> model;
  std::vector<std::unique_ptr<ExecutionProvider>> eps;  // priority order
  std::vector<const EpDevice*> ep_devices;              // parallel to eps
  std::unique_ptr<CpuExecutionProvider> evaluator_ep;   // constant folding runs here
  std::map<MemoryInfo, AllocatorPtr> allocators;
  // Device streams in sets, one set per run in flight; the plan names the primary set's streams.
  StreamPool stream_pool;
  PlanServices services;  // the primary set's
  ThreadPool threads;
  ExecutionPlan plan;

  // Graph capture: the EP whose graphs hold whole runs, and one captured run per graph key.
  struct CapturedGraph {
    int uncaptured_runs = 0;
    bool captured = false;
    std::vector<Value> frame;  // every buffer the recorded work touches
    RunStreams allocators;     // the capture's allocators: RetainingStreams keeps kernel temporaries too
    std::vector<Value> outputs;
    std::vector<const void*> input_addresses;
    std::vector<Shape> input_shapes;
  };
  ExecutionProvider* capture_ep = nullptr;
  std::mutex capture_mutex;
  std::map<int, CapturedGraph> graphs;

  // Copies between two memories that no EP copies between directly go through host memory.
  std::mutex staged_transfers_mutex;
  std::map<std::pair<MemoryInfo, MemoryInfo>, std::unique_ptr<HostStagedTransfer>> staged_transfers;

  std::unique_ptr<Profiler> profiler;  // SessionOptions::enable_profiling
  RunTracing tracing;

  // Automatic graphs (an EP's automatic_graphs_enabled(), without capture_ep); nullptr when runs are eager.
  std::unique_ptr<AutomaticGraphs> automatic_graphs;
  ExecutionProvider* automatic_graphs_ep = nullptr;  // the EP automatic_graphs capture, when set
  std::string graph_status;

  Impl(Environment& e, const SessionOptions& o)
      : env(e),
        options(o),
        threads(ThreadsFor(e, o)),
        profiler(o.enable_profiling ? std::make_unique<Profiler>(o.profile_file_prefix) : nullptr) {}

  // Loads the model with `load` while the providers are created, then optimizes, partitions, plans, prepares.
  void Initialize(const std::function<std::unique_ptr<Model>()>& load);
  void CreateProviders();
  std::vector<const EpDevice*> SelectWithDelegate(const std::vector<const EpDevice*>& all) const;
  void AddProvider(const EpDevice& device, const ProviderOptions& provider_options);
  void Optimize();
  void SaveOptimizedModel() const;
  void SetUpServices();
  std::unique_ptr<SubgraphRunner> CompileSubgraph(const Graph& subgraph);
  std::vector<ExecutionProvider*> ProviderList() const;
  // Whether a run waits for its streams at its end: as run_options.synchronize says, or never (the caller waits
  // later, after queuing more work such as the copies of outputs to the host).
  enum class EndOfRun { kAsOptionsSay, kNoWait };
  std::vector<Value> Execute(RunRequest& request, const RunOptions& run_options,
                             EndOfRun end = EndOfRun::kAsOptionsSay) const;
  std::vector<Value> CollectInputs(const NamedValues& feeds) const;
  void CheckInput(const ValueInfo& info, const Value& value) const;
  size_t OutputIndex(const std::string& name) const;
  void SetUpGraphCapture();
  void SetUpRunTracing();
  void SetUpAutomaticGraphs();
  // Whether this run may go through an automatic graph (RunOptions gpu_graph_id -1 says no).
  bool AutomaticGraphAllowed(const RunOptions& options, const std::vector<Value>& inputs) const;
  void PrepareStaticShapes();
  std::string EndProfiling();
  std::vector<Value> RunWithGraph(RunRequest& request, const RunOptions& run_options);
  // The outputs of an IoBinding run (`produced`, one per model output) delivered as bound: copied into bound
  // tensors or to bound memories, queued on the run's streams. `graph_owned`: the values are an automatic graph's
  // buffers, which its next replay overwrites, so every one is copied, including those already where bound.
  std::vector<Value> DeliverOutputs(const IoBinding& binding, const std::vector<Value>& produced,
                                    const StreamPool::Set& streams, const RunOptions& options, bool graph_owned);
  std::vector<Value> RunFeeds(const NamedValues& feeds, const std::vector<std::string>& output_names,
                              const RunOptions& options, bool traced);
  void Synchronize() const { stream_pool.Synchronize(); }
  size_t ReleaseMemory(const std::function<bool(const MemoryInfo&)>& which);
  void ShrinkAfterRun(const RunOptions& options);
  size_t MaxStreamSets() const;
  // The transfer an EP (or the environment) offers for src -> dst, or nullptr.
  DataTransfer* DirectTransfer(const MemoryInfo& src, const MemoryInfo& dst) const;
  // DirectTransfer, else a copy through host memory (HostStagedTransfer); throws kNotImplemented when neither exists.
  DataTransfer* FindTransfer(const MemoryInfo& src, const MemoryInfo& dst);
};

void Session::Impl::AddProvider(const EpDevice& device, const ProviderOptions& provider_options) {
  ProviderOptions merged = device.ep_options;
  for (const auto& [key, value] : provider_options) merged[key] = value;
  eps.push_back(device.factory->CreateEp(device, merged));
  ep_devices.push_back(&device);
}

void Session::Impl::CreateProviders() {
  const std::vector<const EpDevice*> all = env.GetEpDevices();
  if (!options.providers.empty()) {
    for (const ProviderRequest& request : options.providers) {
      std::vector<const EpDevice*> matching;
      for (const EpDevice* d : all)
        if (d->ep_name == request.ep_name) matching.push_back(d);
      if (matching.empty()) {
        std::ostringstream names;
        for (const EpDevice* d : all) names << " " << d->ep_name;
        Fail(ErrorCode::kInvalidArgument, "execution provider '", request.ep_name,
             "' is not registered (available:", names.str(), ")");
      }
      if (request.device_index < 0 || request.device_index >= static_cast<int>(matching.size()))
        Fail(ErrorCode::kInvalidArgument, "execution provider '", request.ep_name, "' has ", matching.size(),
             " device(s); device index ", request.device_index, " is out of range");
      AddProvider(*matching[request.device_index], request.options);
    }
  } else if (options.selection_delegate != nullptr) {
    for (const EpDevice* device : SelectWithDelegate(all)) AddProvider(*device, {});
  } else {
    std::vector<std::pair<int, const EpDevice*>> ranked;
    for (size_t i = 0; i < all.size(); ++i) {
      const int rank = DevicePreference(options.policy, all[i]->device->type);
      if (rank >= 0) ranked.push_back({rank * 1000 + static_cast<int>(i), all[i]});
    }
    std::sort(ranked.begin(), ranked.end());
    for (const auto& [rank, device] : ranked) AddProvider(*device, {});
  }
  const bool has_cpu = std::any_of(eps.begin(), eps.end(), [](const auto& ep) { return ep->type() == kCpuEpName; });
  if (!has_cpu && !options.disable_cpu_fallback)
    for (const EpDevice* d : all)
      if (d->ep_name == kCpuEpName) {
        AddProvider(*d, {});
        break;
      }
  if (eps.empty()) Fail(ErrorCode::kInvalidArgument, "no execution provider selected");
}

// SessionOptions::selection_delegate's choice among `all` (the CPU EP's devices passed last), checked.
std::vector<const EpDevice*> Session::Impl::SelectWithDelegate(const std::vector<const EpDevice*>& all) const {
  std::vector<const EpDevice*> offered;
  for (const EpDevice* d : all)
    if (d->ep_name != kCpuEpName) offered.push_back(d);
  for (const EpDevice* d : all)
    if (d->ep_name == kCpuEpName) offered.push_back(d);
  std::map<std::string, std::string> model_metadata = model->metadata;
  const auto put = [&](const char* key, const std::string& value) {
    if (!value.empty()) model_metadata.emplace(key, value);
  };
  put("producer_name", model->producer_name);
  put("producer_version", model->producer_version);
  put("domain", model->domain);
  put("graph_name", model->graph_name);
  if (model->model_version != 0) put("model_version", std::to_string(model->model_version));
  std::vector<const EpDevice*> chosen;
  try {
    chosen = options.selection_delegate(offered, model_metadata, {}, offered.size());
  } catch (const std::exception& e) {
    Fail(ErrorCode::kInvalidArgument, "the EP selection delegate failed: ", e.what());
  }
  if (chosen.empty()) Fail(ErrorCode::kInvalidArgument, "the EP selection delegate selected no EP device");
  if (chosen.size() > offered.size())
    Fail(ErrorCode::kInvalidArgument, "the EP selection delegate selected ", chosen.size(), " EP devices; at most ",
         offered.size(), " may be selected");
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (std::find(offered.begin(), offered.end(), chosen[i]) == offered.end())
      Fail(ErrorCode::kInvalidArgument, "the EP selection delegate returned an EP device it was not given");
    if (std::find(chosen.begin(), chosen.begin() + static_cast<std::ptrdiff_t>(i), chosen[i]) !=
        chosen.begin() + static_cast<std::ptrdiff_t>(i))
      Fail(ErrorCode::kInvalidArgument, "the EP selection delegate selected EP device '", chosen[i]->ep_name,
           "' twice");
  }
  return chosen;
}

std::vector<ExecutionProvider*> Session::Impl::ProviderList() const {
  std::vector<ExecutionProvider*> list;
  for (const auto& ep : eps) list.push_back(ep.get());
  return list;
}

void Session::Impl::SetUpServices() {
  auto config = options.config.find("session.use_env_allocators");
  const bool use_env_allocators = config != options.config.end() && config->second == "1";
  auto shared_for = [&](const MemoryInfo& info) { return use_env_allocators ? env.GetSharedAllocator(info) : nullptr; };
  for (const auto& ep : eps) {
    const MemoryInfo info = ep->memory_info();
    AllocatorPtr shared = shared_for(info);
    if (!allocators.count(info)) allocators[info] = shared ? shared : ep->allocator(MemoryType::kDefault);
    if (AllocatorPtr pinned = ep->allocator(MemoryType::kHostAccessible)) allocators.emplace(pinned->Info(), pinned);
  }
  if (!allocators.count(MemoryInfo::Host())) {
    AllocatorPtr shared = shared_for(MemoryInfo::Host());
    allocators[MemoryInfo::Host()] = shared ? shared : std::make_shared<Arena>(CreateHostAllocator(), ArenaOptions{});
  }
  services.find_transfer = [this](const MemoryInfo& src, const MemoryInfo& dst) { return FindTransfer(src, dst); };
  services.allocator_for = [this](const MemoryInfo& info) -> AllocatorPtr {
    auto it = allocators.find(info);
    if (it == allocators.end()) Fail(ErrorCode::kInvalidArgument, "this session has no allocator for ", info.ToString());
    return it->second;
  };
  std::map<MemoryInfo, MemoryInfo> staging;  // device memory -> its EP's host-accessible memory
  for (const auto& ep : eps)
    if (AllocatorPtr pinned = ep->allocator(MemoryType::kHostAccessible)) staging.emplace(ep->memory_info(), pinned->Info());
  services.staging_memory_for = [staging](const MemoryInfo& info) -> std::optional<MemoryInfo> {
    auto it = staging.find(info);
    return it == staging.end() ? std::nullopt : std::optional<MemoryInfo>(it->second);
  };
  services.compile_subgraph = [this](const Graph& subgraph, const Node&) { return CompileSubgraph(subgraph); };
  if (options.stream_cache_bytes < -1)
    Fail(ErrorCode::kInvalidArgument, "SessionOptions::stream_cache_bytes is ", options.stream_cache_bytes,
         " (-1 for the default, 0 for none, or a byte count)");
  stream_pool.set_cache_bytes(static_cast<size_t>(options.stream_cache_bytes < 0 ? kDefaultStreamCacheBytes
                                                                                 : options.stream_cache_bytes));
  services.kernel_settings.deterministic_compute = options.use_deterministic_compute;
  stream_pool.Initialize(ProviderList(), services);
  services = stream_pool.primary().services;
}

DataTransfer* Session::Impl::DirectTransfer(const MemoryInfo& src, const MemoryInfo& dst) const {
  for (const auto& ep : eps)
    if (DataTransfer* t = ep->data_transfer(); t != nullptr && t->CanCopy(src, dst)) return t;
  std::lock_guard<std::mutex> lock(env.impl().mutex);
  return env.impl().FindTransfer(src, dst);
}

DataTransfer* Session::Impl::FindTransfer(const MemoryInfo& src, const MemoryInfo& dst) {
  if (DataTransfer* direct = DirectTransfer(src, dst)) return direct;
  const MemoryInfo host = MemoryInfo::Host();
  DataTransfer* to_host = src == host ? nullptr : DirectTransfer(src, host);
  DataTransfer* from_host = dst == host ? nullptr : DirectTransfer(host, dst);
  if (to_host == nullptr || from_host == nullptr)
    Fail(ErrorCode::kNotImplemented, "no execution provider can copy ", src.ToString(), " -> ", dst.ToString(),
         ", directly or through host memory");
  std::lock_guard<std::mutex> lock(staged_transfers_mutex);
  std::unique_ptr<HostStagedTransfer>& staged = staged_transfers[{src, dst}];
  if (staged == nullptr)
    staged = std::make_unique<HostStagedTransfer>(src, dst, to_host, from_host, allocators.at(host));
  return staged.get();
}

size_t Session::Impl::MaxStreamSets() const {
  if (!stream_pool.has_streams() || capture_ep != nullptr) return 1;  // captured graphs replay on the primary set
  for (const auto& ep : eps)
    if (services.stream_for(ep->memory_info()) != nullptr && !(ep->capability_flags() & kEpRunStreams)) return 1;
  return options.stream_sets > 0 ? static_cast<size_t>(options.stream_sets) : kDefaultStreamSets;
}

std::unique_ptr<SubgraphRunner> Session::Impl::CompileSubgraph(const Graph& subgraph) {
  const std::set<std::string> outer = subgraph.OuterScopeReferences();
  std::vector<ExecutionProvider*> assignment = PartitionGraph(subgraph, ProviderList());
  ExecutionPlan sub_plan = BuildExecutionPlan(subgraph, assignment, services, outer);
  return std::make_unique<CompiledSubgraph>(subgraph, std::move(sub_plan),
                                            std::vector<std::string>(outer.begin(), outer.end()), services);
}

void Session::Impl::Optimize() {
  Graph& graph = *model->graph;
  evaluator_ep = std::make_unique<CpuExecutionProvider>(allocators.at(MemoryInfo::Host()));
  ConstantEvaluator evaluator;
  evaluator.can_evaluate = [&](const Node& node, const Graph& holder) {
    return evaluator_ep->kernels().Find(node, holder) != nullptr;
  };
  evaluator.evaluate = [&](const Node& node, const Graph& holder) {
    Graph single;
    single.opsets = graph.opsets;
    // The infos of the node's own values only (copying every info of the model per folded node made folding
    // PP-OCRv4 det's 342 constant nodes take ~80 ms); inner scopes' infos win.
    const auto add_info = [&](const std::string& name) {
      if (name.empty() || single.value_infos.count(name)) return;
      for (const Graph* g = &holder; g != nullptr; g = g->parent)
        if (auto it = g->value_infos.find(name); it != g->value_infos.end()) {
          single.value_infos.emplace(name, it->second);
          return;
        }
    };
    for (const std::string& in : node.inputs) add_info(in);
    for (const std::string& out : node.outputs) add_info(out);
    for (const std::string& in : node.inputs)
      if (!in.empty()) single.initializers[in] = *FindConstant(holder, in);  // FoldConstants checked it
    for (const std::string& out : node.outputs) {
      ValueInfo info;
      info.name = out;
      single.outputs.push_back(info);
    }
    single.nodes.push_back(std::make_unique<Node>(node));
    std::vector<ExecutionProvider*> assignment = {evaluator_ep.get()};
    PlanServices host_only = services;
    host_only.stream_for = [](const MemoryInfo&) -> Stream* { return nullptr; };
    host_only.copy_stream_for = [](const MemoryInfo&, const MemoryInfo&) -> Stream* { return nullptr; };
    host_only.allocator_on = [this](const MemoryInfo& info, Stream*) { return services.allocator_for(info); };
    ExecutionPlan single_plan = BuildExecutionPlan(single, assignment, host_only);
    RunRequest request;
    request.threads = &threads;
    return ExecutePlan(single_plan, request, host_only);
  };
  // The EP that will run `anchor`: the first in priority order with a kernel for it.
  const auto runner = [this](const Node& anchor, const Graph& g) -> const ExecutionProvider* {
    for (const auto& ep : eps)
      if (ep->kernels().Find(anchor, g) != nullptr) return ep.get();
    return nullptr;
  };
  OptimizerContext context;
  context.evaluator = evaluator;
  context.can_fuse = [runner](const Node& anchor, const Graph& g, const std::string& op_type,
                              const std::string& domain, size_t num_inputs) {
    const ExecutionProvider* ep = runner(anchor, g);
    return ep != nullptr && ep->kernels().HasOp(op_type, domain, num_inputs) && ep->PrefersFusion(op_type, domain);
  };
  context.can_run = [runner](const Node& anchor, const Graph& g, const Node& replacement) {
    const ExecutionProvider* ep = runner(anchor, g);
    return ep != nullptr && ep->kernels().Find(replacement, g) != nullptr &&
           ep->PrefersFusion(replacement.op_type, replacement.domain);
  };
  context.fused_op_preferred = [this](const std::string& op_type, const std::string& domain) {
    for (const auto& ep : eps)
      if (ep->kernels().HasOp(op_type, domain)) return ep->PrefersFusion(op_type, domain);
    return false;
  };
  context.channel_block = [runner](const Node& conv, const Graph& g) -> std::optional<int64_t> {
    const ExecutionProvider* ep = runner(conv, g);
    return ep != nullptr ? ep->PreferredChannelBlock(conv, g) : std::nullopt;
  };
  // Session config "session.disabled_optimizers": pass names, comma-separated (ONNX Runtime's disabled_optimizers).
  if (auto disabled = options.config.find("session.disabled_optimizers"); disabled != options.config.end()) {
    const std::vector<std::string>& known = OptimizerPassNames();
    std::stringstream list(disabled->second);
    for (std::string name; std::getline(list, name, ',');) {
      name.erase(0, name.find_first_not_of(" \t"));
      name.erase(name.find_last_not_of(" \t") + 1);
      if (name.empty()) continue;
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string names;
        for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
        Fail(ErrorCode::kInvalidArgument, "session config session.disabled_optimizers: unknown pass '", name,
             "' (known: ", names, ")");
      }
      context.disabled_passes.insert(name);
    }
  }
  auto float32_regions = options.config.find("session.float16_in_float32");
  if (float32_regions == options.config.end() || float32_regions->second != "0")
    context.kernel_choice = [this](const Node& node, const Graph& g) -> std::optional<KernelChoice> {
      for (const auto& ep : eps)
        if (const KernelRegistration* r = ep->kernels().Find(node, g)) return KernelChoice{ep.get(), r->def.computes_in_float32};
      return std::nullopt;
    };
  for (const PassResult& r : OptimizeGraph(graph, options.optimization_level, context))
    Log(LogLevel::kInfo, "optimizer: ", r.pass, " changed ", r.changes, " node(s)");
}

void Session::Impl::SaveOptimizedModel() const {
  ModelWriteOptions write;
  if (auto it = options.config.find("session.optimized_model_external_initializers_file_name"); it != options.config.end())
    write.external_data_file = it->second;
  if (auto it = options.config.find("session.optimized_model_external_initializers_min_size_in_bytes");
      it != options.config.end()) {
    char* end = nullptr;
    const long long bytes = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || bytes < 0)
      Fail(ErrorCode::kInvalidArgument, "session config session.optimized_model_external_initializers_min_size_in_bytes: '",
           it->second, "' is not a non-negative integer");
    write.external_min_bytes = static_cast<size_t>(bytes);
  }
  if (options.optimized_model_initializer_location) {
    write.initializer_location = options.optimized_model_initializer_location;
    write.sources = &model->external_sources;
  }
  SaveModel(*model, *model->graph, options.optimized_model_filepath, write);
  Log(LogLevel::kInfo, "optimized model written to ", options.optimized_model_filepath);
}

// The providers (device contexts, streams, library handles: ~100 ms for a GPU) do not depend on the model, so
// they are created on another thread while this one parses the model. The profile's "load" phase ends when the
// model is read, "create_providers" when the providers are ready too.
void Session::Impl::Initialize(const std::function<std::unique_ptr<Model>()>& load) {
  if (options.log_level < LogThreshold()) SetLogThreshold(options.log_level);
  ProfilePhases phases(profiler.get());
  // A selection delegate reads the model's metadata: the providers come after the model then.
  const bool after_load = options.providers.empty() && options.selection_delegate != nullptr;
  std::future<void> providers = std::async(after_load ? std::launch::deferred : std::launch::async, [this] {
    CreateProviders();
    SetUpServices();
  });
  try {
    model = load();
  } catch (...) {
    if (!after_load) providers.wait();  // the model's error is the one to report
    throw;
  }
  phases.Mark("load");
  Graph& graph = *model->graph;
  ApplyFreeDimensionOverrides(graph, options.free_dimension_overrides, options.free_dimension_overrides_by_denotation);
  ApplyInitializerOverrides(graph, options.initializers);
  InferElementTypes(graph);
  if (ExpandGradients(graph) + ExpandContribAttention(graph) > 0) InferElementTypes(graph);
  PropagateStaticShapes(graph);  // after the overrides: they can make symbolic input dims concrete
  providers.get();
  phases.Mark("create_providers");
  Optimize();
  if (!options.optimized_model_filepath.empty()) SaveOptimizedModel();
  phases.Mark("optimize");
  std::vector<ExecutionProvider*> assignment = PartitionGraph(graph, ProviderList());
  phases.Mark("partition");
  plan = BuildExecutionPlan(graph, assignment, services);
  SetUpGraphCapture();
  stream_pool.set_max_sets(MaxStreamSets());
  SetUpRunTracing();
  SetUpAutomaticGraphs();
  // Before the preparation runs: kernels choose by device time alone where every run will be replayed.
  for (const auto& ep : eps) ep->SetRunsReplayed(ep.get() == capture_ep || ep.get() == automatic_graphs_ep);
  phases.Mark("plan");
  if (LogEnabled(LogLevel::kVerbose))
    for (const PlanStep& step : plan.steps) Log(LogLevel::kVerbose, "plan: ", step.label);
  PrepareStaticShapes();
  for (const auto& ep : eps) ep->OnSessionReady();
  phases.Mark("prepare");
}

namespace {

// Whether any node, at any subgraph depth, gives results that depend on more than its inputs.
bool HasStatefulOps(const Graph& graph) {
  for (const auto& node : graph.nodes) {
    if (IsNondeterministicOp(*node)) return true;
    for (const auto& [name, attribute] : node->attributes) {
      if (attribute.g && HasStatefulOps(*attribute.g)) return true;
      for (const auto& g : attribute.graphs)
        if (g && HasStatefulOps(*g)) return true;
    }
  }
  return false;
}

}  // namespace

void Session::Impl::SetUpAutomaticGraphs() {
  // "session.automatic_graph_upload_pieces": 1-8 pieces the host feeds of a Run(feeds) replay go up in (default 3;
  // "1": one copy before the first step).
  int upload_pieces = 3;
  if (auto it = options.config.find("session.automatic_graph_upload_pieces"); it != options.config.end()) {
    char* end = nullptr;
    const long pieces = std::strtol(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || pieces < 1 || pieces > 8)
      Fail(ErrorCode::kInvalidArgument, "session config session.automatic_graph_upload_pieces: '", it->second,
           "' is not an integer from 1 to 8");
    upload_pieces = static_cast<int>(pieces);
  }
  if (capture_ep != nullptr) {
    graph_status = "explicit: IoBinding runs are captured per gpu_graph_id on " + capture_ep->type();
    return;
  }
  ExecutionProvider* ep = nullptr;
  for (const auto& candidate : eps)
    if ((candidate->capability_flags() & kEpGraphCapture) && candidate->automatic_graphs_enabled()) {
      ep = candidate.get();
      break;
    }
  if (ep == nullptr) {
    graph_status = "eager: no execution provider of the session has automatic graphs enabled";
    return;
  }
  const MemoryInfo device = ep->memory_info();
  const std::optional<MemoryInfo> staging =
      services.staging_memory_for ? services.staging_memory_for(device) : std::nullopt;
  const Graph& graph = *model->graph;
  std::string reason;
  if (services.stream_for(device) == nullptr) {
    reason = "the execution provider has no stream";
  } else if (!staging) {
    reason = "the execution provider has no host-accessible memory to stage feeds in";
  } else if (profiler != nullptr) {
    reason = "profiling is enabled (per-node times need eager runs)";
  } else if (!tracing.step_hooks.empty()) {
    reason = "an execution provider traces every step (step hooks, e.g. NVTX ranges)";
  } else if (HasStatefulOps(graph)) {
    reason = "the model has random ops (a replay would repeat their numbers)";
  }
  for (size_t i = 0; reason.empty() && i < graph.inputs.size(); ++i) {
    const MemoryInfo& where = plan.slots[plan.input_slots[i]].location;
    if (graph.inputs[i].kind != ValueInfo::Kind::kTensor)
      reason = "input '" + graph.inputs[i].name + "' is not a tensor";
    else if (where != device && AutomaticGraphs::Reads(plan, i))
      reason = "input '" + graph.inputs[i].name + "' is read in " + where.ToString() + " memory";
  }
  for (size_t i = 0; reason.empty() && i < graph.outputs.size(); ++i)
    if (graph.outputs[i].kind != ValueInfo::Kind::kTensor || graph.outputs[i].type == DataType::kString)
      reason = "output '" + graph.outputs[i].name + "' is not a numeric tensor";
  if (reason.empty()) reason = GraphCaptureBlocker(plan, *ep);
  if (!reason.empty()) {
    graph_status = "eager: " + reason;
    Log(LogLevel::kInfo, "automatic graphs (", ep->type(), ") are not used for this model: ", reason);
    return;
  }
  // "session.automatic_graph_early_downloads": "0" keeps every output's download after the graph's last step (A/B
  // comparisons); anything else or unset downloads outputs as soon as their steps have written them.
  auto early = options.config.find("session.automatic_graph_early_downloads");
  const bool early_downloads = early == options.config.end() || early->second != "0";
  automatic_graphs = std::make_unique<AutomaticGraphs>(plan, *ep, *staging, threads, ep->automatic_graph_limit(),
                                                       early_downloads, upload_pieces);
  automatic_graphs_ep = ep;
  graph_status = "automatic: Run(feeds) and IoBinding runs are captured and replayed on " + ep->type();
}

bool Session::Impl::AutomaticGraphAllowed(const RunOptions& options, const std::vector<Value>& inputs) const {
  if (automatic_graphs == nullptr) return false;
  if (auto it = options.config.find("gpu_graph_id"); it != options.config.end() && !it->second.empty() && it->second[0] == '-')
    return false;
  return automatic_graphs->Accepts(inputs);
}

// Session config "session.prepare_static_shapes": when every graph input has a declared static shape, the
// session runs the model on zeros before it is returned, so that what kernels prepare on their first calls
// (oneDNN primitives and their JIT code, pre-packed weights, cuDNN plans and algorithm searches, library handles
// and the kernels they load, the arena's memory and its first-touch page faults) happens at creation rather than
// in the caller's first Run. Sessions with an EP other than the CPU run it four times: an EP that records a
// step's launches on the second call with the same buffers (the CUDA EP's step graphs) has them recorded too, for
// the buffers host-tensor Runs get. The first run's blocks come from the arena, later runs' from what the run
// before left in its streams' caches, last freed first out, so a step's buffers can alternate between two sets
// from run to run: runs 2-4 see each set twice. The runs take Run(feeds)'s own path (stream set, output
// staging in pinned memory), so that what they leave is what the caller's first Run finds. "1" / unset: when the shapes allow; "0": never. Skipped for
// models with random ops (the run would advance their generators) and for graph capture (the capture is the
// preparation); a failure (zeros can be invalid data, e.g. a Range with delta 0) is logged and ignored.
void Session::Impl::PrepareStaticShapes() {
  auto setting = options.config.find("session.prepare_static_shapes");
  const std::string value = setting == options.config.end() ? "" : setting->second;
  if (value == "0" || capture_ep != nullptr) return;
  const bool cpu_only =
      std::all_of(eps.begin(), eps.end(), [](const auto& ep) { return ep->type() == "CPUExecutionProvider"; });
  const Graph& graph = *model->graph;
  if (HasStatefulOps(graph)) return;
  NamedValues feeds;
  for (const ValueInfo& input : graph.inputs) {
    if (input.kind != ValueInfo::Kind::kTensor || !input.shape || input.type == DataType::kUndefined ||
        input.type == DataType::kString)
      return;
    std::vector<int64_t> dims;
    for (const Dim& d : *input.shape) {
      if (!d.is_concrete()) return;
      dims.push_back(d.value);
    }
    Tensor zeros = Tensor::Allocate(input.type, Shape(std::move(dims)));
    if (zeros.SizeInBytes() > 0) std::memset(zeros.raw_data(), 0, zeros.SizeInBytes());
    feeds.emplace_back(input.name, Value(std::move(zeros)));
  }
  RunOptions run_options;
  run_options.tag = "prepare";
  // CPU sessions whose shapes all follow from the inputs' run dry (convolutions prepare without computing); any
  // error there runs the full preparation instead, which reports it.
  if (cpu_only && value != "full" && AllowsDryPreparation(graph)) {
    try {
      RunRequest request;
      request.inputs = CollectInputs(feeds);
      request.preparing_only = true;
      Execute(request, run_options, Impl::EndOfRun::kNoWait);
      Log(LogLevel::kVerbose, "session.prepare_static_shapes: prepared with a dry run");
      return;
    } catch (const std::exception& e) {
      Log(LogLevel::kVerbose, "session.prepare_static_shapes: the dry preparation run failed (", e.what(),
          "); preparing with a full run");
    }
  }
  try {
    for (int run = 0; run < (cpu_only ? 1 : 4); ++run) RunFeeds(feeds, {}, run_options, /*traced=*/false);
  } catch (const std::exception& e) {
    Log(LogLevel::kInfo, "session.prepare_static_shapes: the preparation run failed (", e.what(),
        "); kernels prepare on the first run instead");
  }
}

// Same-stream caches go back to the arenas first; once the streams are idle, the arenas of the memories `which`
// accepts give their unused regions back. Memory in use (tensors of runs in flight, of the caller) stays.
size_t Session::Impl::ReleaseMemory(const std::function<bool(const MemoryInfo&)>& which) {
  size_t released = stream_pool.has_streams() ? stream_pool.TrimCaches() : 0;
  Synchronize();
  for (const auto& [info, allocator] : allocators)
    if (auto* arena = dynamic_cast<Arena*>(allocator.get()); arena != nullptr && which(info)) released += arena->Shrink();
  return released;
}

// RunOptions config "memory.enable_memory_arena_shrinkage": "cpu:0;gpu:1" (ONNX Runtime's syntax; "cuda:N" and
// an EP's short name work too) -> whether `info` is listed.
static bool ListedForShrinkage(const std::string& list, const MemoryInfo& info) {
  std::stringstream entries(list);
  for (std::string entry; std::getline(entries, entry, ';');) {
    const size_t colon = entry.find(':');
    std::string device = entry.substr(0, colon);
    for (char& c : device) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const int64_t id = colon == std::string::npos ? 0 : std::atoll(entry.c_str() + colon + 1);
    const bool host = info.IsHostReadable();
    if (device == "cpu" ? host : (!host && static_cast<int64_t>(info.device_id) == id)) return true;
  }
  return false;
}

void Session::Impl::ShrinkAfterRun(const RunOptions& options) {
  auto entry = options.config.find("memory.enable_memory_arena_shrinkage");
  if (entry == options.config.end() || entry->second.empty()) return;
  ReleaseMemory([&](const MemoryInfo& info) { return ListedForShrinkage(entry->second, info); });
}

void Session::Impl::SetUpGraphCapture() {
  for (const auto& ep : eps) {
    if (!(ep->capability_flags() & kEpGraphCapture) || !ep->graph_capture_enabled()) continue;
    if (capture_ep != nullptr)
      Fail(ErrorCode::kInvalidArgument, "graph capture is enabled on both ", capture_ep->type(), " and ", ep->type(),
           "; enable it on one execution provider");
    capture_ep = ep.get();
  }
  if (capture_ep == nullptr) return;
  const std::string what = "graph capture (" + capture_ep->type() + "): ";
  if (services.stream_for(capture_ep->memory_info()) == nullptr)
    Fail(ErrorCode::kNotImplemented, what, "the execution provider has no stream");
  if (const std::string blocker = GraphCaptureBlocker(plan, *capture_ep); !blocker.empty())
    Fail(ErrorCode::kNotImplemented, what, "the model cannot be captured: ", blocker);
}

void Session::Impl::SetUpRunTracing() {
  tracing.plan = &plan;
  tracing.profiler = profiler.get();
  for (const auto& ep : eps) {
    const uint32_t flags = ep->capability_flags();
    Stream* stream = services.stream_for(ep->memory_info());
    if (flags & kEpRunHooks) tracing.run_hooks.push_back({ep.get(), stream});
    if (flags & kEpStepHooks) tracing.step_hooks.push_back(ep.get());
    if ((flags & kEpProfiling) && profiler != nullptr && stream != nullptr) tracing.timed.push_back({ep.get(), stream});
  }
}

std::string Session::Impl::EndProfiling() {
  if (profiler == nullptr) return "";
  Synchronize();
  return profiler->End();
}

std::vector<Value> Session::Impl::RunWithGraph(RunRequest& request, const RunOptions& run_options) {
  int key = 0;
  if (auto it = run_options.config.find("gpu_graph_id"); it != run_options.config.end()) {
    try {
      key = std::stoi(it->second);
    } catch (const std::exception&) {
      Fail(ErrorCode::kInvalidArgument, "run option gpu_graph_id must be an integer, got '", it->second, "'");
    }
  }
  if (key < 0) return Execute(request, run_options);  // -1: run without a graph
  std::lock_guard<std::mutex> lock(capture_mutex);
  CapturedGraph& graph = graphs[key];
  const std::vector<ValueInfo>& inputs = model->graph->inputs;
  if (!graph.captured && graph.uncaptured_runs < 1) {  // warm-up: caches, algorithm choices, arena growth
    ++graph.uncaptured_runs;
    return Execute(request, run_options);
  }
  Stream& stream = *services.stream_for(capture_ep->memory_info());
  if (!graph.captured) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value& v = request.inputs[i];
      const MemoryInfo& where = plan.slots[plan.input_slots[i]].location;
      if (!v.is_tensor() || v.tensor().memory_info() != where)
        Fail(ErrorCode::kInvalidArgument, "graph capture: input '", inputs[i].name, "' must be bound in ",
             where.ToString(), " memory");
      graph.input_addresses.push_back(v.tensor().raw_data());
      graph.input_shapes.push_back(v.tensor().shape());
    }
    stream.Synchronize();
    RunRequest capture = request;
    capture.options = &run_options;
    capture.threads = &threads;
    capture.synchronize = false;
    capture.retained_frame = &graph.frame;
    graph.allocators = RetainingStreams(plan, request.streams, &services);
    capture.streams = &graph.allocators;
    capture_ep->BeginCapture(stream, key);
    try {
      graph.outputs = ExecutePlan(plan, capture, services);
    } catch (...) {
      capture_ep->EndCapture(stream, key);
      graph = CapturedGraph{};
      throw;
    }
    capture_ep->EndCapture(stream, key);
    graph.captured = true;
    Log(LogLevel::kInfo, "captured graph ", key, " on ", capture_ep->type());
  } else {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value& v = request.inputs[i];
      if (!v.is_tensor() || v.tensor().raw_data() != graph.input_addresses[i] || v.tensor().shape() != graph.input_shapes[i])
        Fail(ErrorCode::kInvalidArgument, "input '", inputs[i].name, "' is bound to another buffer or shape than when graph ",
             key, " was captured; update the captured tensor in place or use another gpu_graph_id");
    }
  }
  if (run_options.terminate.load()) Fail(ErrorCode::kTerminated, "run terminated by RunOptions::terminate");
  capture_ep->ReplayGraph(stream, key);
  if (run_options.synchronize) stream.Synchronize();
  return graph.outputs;
}

void Session::Impl::CheckInput(const ValueInfo& info, const Value& value) const {
  if (value.is_none() && info.kind == ValueInfo::Kind::kOptional) return;  // an empty optional
  if (value.is_none()) Fail(ErrorCode::kInvalidArgument, "input '", info.name, "' has no value");
  if (info.kind == ValueInfo::Kind::kTensor && !value.is_tensor())
    Fail(ErrorCode::kInvalidArgument, "input '", info.name, "' expects a tensor");
  if (!value.is_tensor()) return;
  const Tensor& t = value.tensor();
  if (info.type != DataType::kUndefined && t.type() != info.type)
    Fail(ErrorCode::kInvalidArgument, "input '", info.name, "' expects element type ", DataTypeName(info.type), ", got ",
         DataTypeName(t.type()));
  if (!info.shape) return;
  const std::vector<Dim>& dims = *info.shape;
  bool ok = dims.size() == t.shape().rank();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = !dims[i].is_concrete() || dims[i].value == t.shape()[i];
  if (!ok)
    Fail(ErrorCode::kInvalidArgument, "input '", info.name, "' expects shape ", info.ShapeString(), ", got ",
         t.shape().ToString());
}

std::vector<Value> Session::Impl::CollectInputs(const NamedValues& feeds) const {
  const std::vector<ValueInfo>& inputs = model->graph->inputs;
  std::vector<Value> values(inputs.size());
  std::vector<bool> fed(inputs.size(), false);
  for (const auto& feed : feeds) {
    const std::string& name = feed.first;
    const Value& value = feed.second;
    auto it = std::find_if(inputs.begin(), inputs.end(), [&](const ValueInfo& v) { return v.name == name; });
    if (it == inputs.end()) {
      std::ostringstream valid;
      for (const ValueInfo& v : inputs) valid << " '" << v.name << "'";
      Fail(ErrorCode::kInvalidArgument, "the model has no input '", name, "' (inputs:", valid.str(), ")");
    }
    const size_t i = static_cast<size_t>(it - inputs.begin());
    CheckInput(*it, value);
    values[i] = value;
    fed[i] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!fed[i]) Fail(ErrorCode::kInvalidArgument, "input '", inputs[i].name, "' was not given a value");
  return values;
}

std::vector<Value> Session::Impl::Execute(RunRequest& request, const RunOptions& run_options, EndOfRun end) const {
  request.options = &run_options;
  if (run_options.timeout_ms > 0)
    request.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(run_options.timeout_ms);
  request.threads = &threads;
  request.synchronize = end == EndOfRun::kAsOptionsSay && run_options.synchronize;
  if (!run_options.tag.empty()) Log(LogLevel::kVerbose, "run '", run_options.tag, "'");
  return ExecutePlan(plan, request, request.streams != nullptr ? *request.streams->services : services);
}

size_t Session::Impl::OutputIndex(const std::string& name) const {
  const std::vector<ValueInfo>& outputs = model->graph->outputs;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].name == name) return i;
  Fail(ErrorCode::kInvalidArgument, "the model has no output '", name, "'");
}

Session::Session(Environment& env, const std::filesystem::path& model_path, const SessionOptions& options)
    : impl_(std::make_unique<Impl>(env, options)) {
  impl_->Initialize([&] { return LoadModel(model_path, ExternalDataOf(impl_->options)); });
}

Session::Session(Environment& env, const void* model_bytes, size_t size, const SessionOptions& options)
    : impl_(std::make_unique<Impl>(env, options)) {
  impl_->Initialize(
      [&] { return LoadModelFromBytes(model_bytes, size, {}, "<memory>", ExternalDataOf(impl_->options)); });
}

Session::~Session() {
  try {
    impl_->Synchronize();
  } catch (const std::exception& e) {
    Log(LogLevel::kWarning, "session end: a stream reported an error: ", e.what());
  }
  // Tensors the caller still holds free their memory after the streams are gone: no fences on them.
  impl_->stream_pool.Detach();
  try {
    impl_->EndProfiling();
  } catch (const std::exception& e) {
    Log(LogLevel::kWarning, "the profile was not written: ", e.what());
  }
}

std::vector<Value> Session::Run(const NamedValues& feeds, const std::vector<std::string>& output_names,
                                const RunOptions& options) {
  return impl_->RunFeeds(feeds, output_names, options, /*traced=*/true);
}

// Session::Run(feeds); `traced` = false leaves the run out of profiles and EP run hooks (the preparation runs).
std::vector<Value> Session::Impl::RunFeeds(const NamedValues& feeds, const std::vector<std::string>& output_names,
                                           const RunOptions& options, bool traced) {
  StreamPool::Lease lease = stream_pool.Acquire();
  const StreamPool::Set& streams = lease.set();
  std::optional<RunTracer> tracer;
  if (traced) tracer.emplace(tracing, options.tag, streams.streams());
  CallerStreamJoin caller_stream(streams, options.stream);  // RunOptions::stream
  RunRequest request;
  if (tracer) request.observer = tracer->observer();
  request.streams = streams.streams();
  request.inputs = CollectInputs(feeds);
  std::vector<size_t> wanted;
  for (const std::string& name : output_names) wanted.push_back(OutputIndex(name));
  if (output_names.empty())
    for (size_t i = 0; i < model->graph->outputs.size(); ++i) wanted.push_back(i);
  const bool graphed = AutomaticGraphAllowed(options, request.inputs);
  std::unique_lock<std::mutex> hold;  // automatic graphs: nothing else queues on the set during this run
  if (automatic_graphs != nullptr) hold = automatic_graphs->Hold(streams);
  if (graphed) {
    std::vector<Value> result;
    if (automatic_graphs->Run(streams, request.inputs, AutomaticGraphs::Outputs::kHost, wanted, options, result, {})) {
      if (tracer) tracer->Finish(/*synchronized=*/true);
      ShrinkAfterRun(options);
      return result;
    }
  }
  // Outputs are returned in host memory, so the run must finish: the copies of device outputs queue behind the
  // run on its streams, and one wait at the end covers the run and every copy (no wait per output). `options`
  // stays the caller's object so that a terminate flag set from another thread is seen.
  std::vector<Value> produced = Execute(request, options, Impl::EndOfRun::kNoWait);
  if (graphed) automatic_graphs->WarmedUp(streams, request.inputs, AutomaticGraphs::Outputs::kHost, produced);
  // Small device outputs go to their device's staging (pinned) memory, where the copy is asynchronous: a copy to
  // pageable memory would block the host copy by copy. After the wait they are copied to host memory.
  std::vector<Value> picked;
  std::vector<MemoryInfo> places;
  for (size_t i : wanted) {
    picked.push_back(produced[i]);
    places.push_back(StagingPlace(produced[i], streams.services));
  }
  std::vector<Value> result = CopyValuesTo(picked, places, streams.services, false);
  streams.Synchronize();
  const AllocatorPtr host = streams.services.allocator_for(MemoryInfo::Host());
  for (size_t k = 0; k < result.size(); ++k) {
    if (places[k] == MemoryInfo::Host() || !result[k].is_tensor()) continue;
    const Tensor& staged = result[k].tensor();
    Tensor copy = Tensor::Allocate(staged.type(), staged.shape(), host);
    std::memcpy(copy.raw_data(), staged.raw_data(), staged.SizeInBytes());
    result[k] = Value(std::move(copy));
  }
  if (tracer) tracer->Finish(/*synchronized=*/true);
  ShrinkAfterRun(options);
  return result;
}

void Session::Run(IoBinding& binding, const RunOptions& options) {
  if (&binding.session() != this) Fail(ErrorCode::kInvalidArgument, "the IoBinding was created for another session");
  NamedValues feeds;
  for (const IoBinding::Input& in : binding.inputs()) feeds.push_back({in.name, in.value});
  StreamPool::Lease lease = impl_->stream_pool.Acquire();
  const StreamPool::Set& streams = lease.set();
  CallerStreamJoin caller_stream(streams, options.stream);  // RunOptions::stream
  RunTracer tracer(impl_->tracing, options.tag, streams.streams());
  RunRequest request;
  request.observer = tracer.observer();
  request.streams = streams.streams();
  request.inputs = impl_->CollectInputs(feeds);
  for (const IoBinding::Output& out : binding.outputs())
    if (out.preallocated.is_tensor())
      request.preallocated[impl_->plan.output_slots[impl_->OutputIndex(out.name)]] = out.preallocated.tensor();
  std::vector<Value> results;
  std::unique_lock<std::mutex> hold;  // automatic graphs: nothing else queues on the set during this run
  if (impl_->automatic_graphs != nullptr) hold = impl_->automatic_graphs->Hold(streams);
  if (impl_->AutomaticGraphAllowed(options, request.inputs)) {
    std::vector<Value> unused;
    const bool replayed = impl_->automatic_graphs->Run(
        streams, request.inputs, AutomaticGraphs::Outputs::kDevice, {}, options, unused,
        [&](const std::vector<Value>& produced) {
          results = impl_->DeliverOutputs(binding, produced, streams, options, /*graph_owned=*/true);
        });
    if (replayed) {
      if (options.synchronize) streams.Synchronize();
    } else {
      std::vector<Value> produced = impl_->Execute(request, options);
      impl_->automatic_graphs->WarmedUp(streams, request.inputs, AutomaticGraphs::Outputs::kDevice, produced);
      results = impl_->DeliverOutputs(binding, produced, streams, options, /*graph_owned=*/false);
    }
  } else {
    std::vector<Value> produced =
        impl_->capture_ep != nullptr ? impl_->RunWithGraph(request, options) : impl_->Execute(request, options);
    results = impl_->DeliverOutputs(binding, produced, streams, options, /*graph_owned=*/false);
  }
  binding.mutable_results() = std::move(results);
  caller_stream.Done();
  tracer.Finish(options.synchronize);
  impl_->ShrinkAfterRun(options);
}

std::vector<Value> Session::Impl::DeliverOutputs(const IoBinding& binding, const std::vector<Value>& produced,
                                                 const StreamPool::Set& streams, const RunOptions& options,
                                                 bool graph_owned) {
  const PlanServices& run_services = streams.services;
  // A graph's buffer bound to its own memory: a device-to-device copy on the memory's compute stream, queued with the
  // others of that memory as one batch once every output is known (one launch for dozens of outputs).
  std::map<MemoryInfo, std::vector<CopyPair>> device_copies;
  std::vector<Tensor> copy_targets;  // the copies' targets (sharing their buffers), at stable addresses
  copy_targets.reserve(binding.outputs().size());
  const auto copy_on_device = [&](const Tensor& source, const Tensor& target) {
    copy_targets.push_back(target);
    device_copies[source.memory_info()].push_back({&source, &copy_targets.back()});
  };
  // Outputs bound to a memory (not a tensor) are copied there as one batch.
  std::vector<Value> moving;
  std::vector<MemoryInfo> places;
  std::vector<Value> duplicated(binding.outputs().size());
  for (size_t k = 0; k < binding.outputs().size(); ++k) {
    const IoBinding::Output& out = binding.outputs()[k];
    if (out.preallocated.is_tensor()) continue;
    const Value& value = produced[OutputIndex(out.name)];
    if (graph_owned && value.is_tensor() && value.tensor().memory_info() == out.where &&
        run_services.stream_for(out.where) != nullptr) {
      const Tensor& source = value.tensor();
      Tensor copy = Tensor::Allocate(source.type(), source.shape(),
                                     run_services.allocator_on(out.where, run_services.stream_for(out.where)));
      if (source.SizeInBytes() > 0) copy_on_device(source, copy);
      duplicated[k] = Value(std::move(copy));
      continue;
    }
    if (graph_owned && value.is_tensor() && value.tensor().memory_info() == out.where &&
        out.where.IsHostReadable()) {  // a shape-derived host value the graph keeps
      const Tensor& source = value.tensor();
      Tensor copy = Tensor::Allocate(source.type(), source.shape(), run_services.allocator_for(out.where));
      if (source.SizeInBytes() > 0) std::memcpy(copy.raw_data(), source.raw_data(), source.SizeInBytes());
      duplicated[k] = Value(std::move(copy));
      continue;
    }
    moving.push_back(value);
    places.push_back(out.where);
  }
  std::vector<Value> moved = CopyValuesTo(moving, places, run_services, options.synchronize);
  std::vector<Value> results;
  size_t next_moved = 0;
  for (size_t k = 0; k < binding.outputs().size(); ++k) {
    const IoBinding::Output& out = binding.outputs()[k];
    const Value& value = produced[OutputIndex(out.name)];
    if (!duplicated[k].is_none()) {
      results.push_back(std::move(duplicated[k]));
      continue;
    }
    if (!out.preallocated.is_tensor()) {
      results.push_back(std::move(moved[next_moved++]));
      continue;
    }
    Tensor target = out.preallocated.tensor();
    const Tensor& produced_tensor = value.tensor();
    if (produced_tensor.raw_data() != target.raw_data()) {  // not written in place: copy into it
      if (produced_tensor.type() != target.type() || produced_tensor.shape() != target.shape())
        Fail(ErrorCode::kInvalidArgument, "output '", out.name, "' is bound to ", target.Describe(),
             " but the model produced ", produced_tensor.Describe());
      services.find_transfer(produced_tensor.memory_info(), target.memory_info());  // names a missing path
      if (graph_owned && produced_tensor.memory_info() == target.memory_info() &&
          run_services.stream_for(target.memory_info()) != nullptr) {
        if (target.SizeInBytes() > 0) copy_on_device(produced_tensor, target);
      } else {
        streams.Synchronize();
        env.CopyTensors({&produced_tensor, 1}, {&target, 1}, nullptr);
      }
    }
    results.push_back(Value(target));
  }
  for (const auto& [where, pairs] : device_copies)
    run_services.find_transfer(where, where)->Copy(pairs, run_services.stream_for(where));
  return results;
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->model->graph->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->model->graph->outputs; }

namespace {

ModelMetadata MetadataOf(const Model& m) {
  ModelMetadata md;
  md.producer_name = m.producer_name;
  md.producer_version = m.producer_version;
  md.domain = m.domain;
  md.description = m.doc_string;
  md.graph_name = m.graph_name;
  md.version = m.model_version;
  md.ir_version = m.ir_version;
  md.opsets = m.opsets;
  md.custom = m.metadata;
  return md;
}

}  // namespace

ModelMetadata Session::metadata() const { return MetadataOf(*impl_->model); }

std::vector<std::string> GraphOptimizerPassNames() { return OptimizerPassNames(); }

ModelMetadata ReadModelMetadata(const std::filesystem::path& model_path) { return MetadataOf(*LoadModel(model_path)); }

ModelMetadata ReadModelMetadata(const void* model_bytes, size_t size) {
  return MetadataOf(*LoadModelFromBytes(model_bytes, size, {}, "<memory>"));
}

std::vector<std::string> Session::providers() const {
  std::vector<std::string> names;
  for (const auto& ep : impl_->eps) names.push_back(ep->type());
  return names;
}

MemoryInfo Session::InputMemoryInfo(const std::string& input_name) const {
  const std::vector<ValueInfo>& inputs = impl_->model->graph->inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == input_name) return impl_->plan.slots[impl_->plan.input_slots[i]].location;
  Fail(ErrorCode::kInvalidArgument, "the model has no input '", input_name, "'");
}

MemoryInfo Session::OutputMemoryInfo(const std::string& output_name) const {
  return impl_->plan.slots[impl_->plan.output_slots[impl_->OutputIndex(output_name)]].location;
}

const EpDevice* Session::InputEpDevice(const std::string& input_name) const {
  const MemoryInfo where = InputMemoryInfo(input_name);
  for (size_t i = 0; i < impl_->eps.size(); ++i)
    if (impl_->eps[i]->memory_info() == where) return impl_->ep_devices[i];
  return nullptr;
}

std::vector<PartitionEntry> Session::Partition() const {
  std::vector<PartitionEntry> entries;
  for (int slot : impl_->plan.input_slots) {  // feeds are copied where their consumers read them
    const ValueSlot& input = impl_->plan.slots[slot];
    if (input.location == MemoryInfo::Host()) continue;
    PartitionEntry e;
    e.is_copy = true;
    e.node_name = input.name;
    e.op_type = "Copy";
    e.copy_from = "feed (when not already there)";
    e.copy_to = input.location.ToString();
    entries.push_back(std::move(e));
  }
  for (const PlanStep& step : impl_->plan.steps) {
    PartitionEntry e;
    if (step.kind == PlanStep::Kind::kKernel) {
      e.node_name = step.node->name;
      e.op_type = step.node->op_type;
      e.domain = step.node->domain;
      e.ep = step.ep->type();
    } else {
      e.is_copy = true;
      e.node_name = impl_->plan.slots[step.inputs[0]].name;
      e.op_type = "Copy";
      e.copy_from = impl_->plan.slots[step.inputs[0]].location.ToString();
      e.copy_to = impl_->plan.slots[step.outputs[0]].location.ToString();
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

void Session::Synchronize() const { impl_->Synchronize(); }

size_t Session::ReleaseMemory() { return impl_->ReleaseMemory([](const MemoryInfo&) { return true; }); }

std::string Session::GraphStatus() const { return impl_->graph_status; }

size_t Session::AutomaticGraphCaptures() const {
  return impl_->automatic_graphs != nullptr ? impl_->automatic_graphs->captures() : 0;
}

size_t Session::AutomaticGraphReplays() const {
  return impl_->automatic_graphs != nullptr ? impl_->automatic_graphs->replays() : 0;
}

size_t Session::StreamSets() const { return impl_->stream_pool.has_streams() ? impl_->stream_pool.size() : 0; }

std::string Session::EndProfiling() { return impl_->EndProfiling(); }

uint64_t Session::ProfilingStartTimeNs() const {
  return impl_->profiler != nullptr ? impl_->profiler->start_time_ns() : 0;
}

}  // namespace tessera
