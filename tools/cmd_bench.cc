// `tessera bench [MODEL]`: run latency with host tensors and with IoBinding in the EP's memory, and, when
// the first EP is the CUDA EP, with IoBinding replaying a CUDA graph (a second session with
// enable_cuda_graph = 1, RunOptions gpu_graph_id 0).
//
// Each mode warms up (at most `--warmup` runs, fewer once a quarter of its budget is spent), then runs
// until it has `--runs` samples or its share of `--time-budget` is spent (but always at least kMinRuns
// samples, or --runs when smaller).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <functional>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "cli_session.h"
#include "commands.h"
#include "random_inputs.h"
#include "table.h"

namespace tessera::cli {
namespace {

constexpr const char* kBenchUsage =
    "usage: tessera bench [MODEL] [--runs N] [--warmup N] [--time-budget SECONDS] [--threads N]\n"
    "                     [--input NAME=FILE.npy]... [--dim SYMBOL=VALUE]... [--shape NAME=D1xD2...]...\n"
    "                     [--ep NAME]... [--plugin NAME=PATH]... [--profile PREFIX] [--concurrency N]\n"
    "                     [--modes host,concurrent,io,graph,concurrent-graph,data-parallel]\n"
    "Measures Run(feeds) with host tensors and Run(IoBinding) with inputs bound once and outputs bound to the\n"
    "EP's memory; on the CUDA EP also Run(IoBinding) replaying a CUDA graph (on the Vulkan EP: resubmitting recorded\n"
    "command buffers). --concurrency N adds Run(feeds)\n"
    "from N threads at once on the same session (latency of each call, and calls per second over all threads).\n"
    "MODEL defaults to .models/default.onnx (PP-OCRv4 detection, input x 1x3x640x640).\n"
    "--profile writes a Chrome-trace profile of every run to PREFIX_<date-time>.json (one file per session).\n"
    "--modes measures only the modes named (default: all that apply but concurrent-graph); `concurrent` needs\n"
    "--concurrency N > 1. concurrent-graph (CUDA EP, --concurrency N): N sessions replaying their CUDA graphs from N\n"
    "threads at once, each on its own stream: the throughput the device allows when runs overlap, with no host cost.\n"
    "data-parallel: DataParallelRunner (one session per EP device of the first EP, a shared request queue) on one\n"
    "device, then on all of them; --concurrency N (default 2) requests in flight per device.\n";
constexpr const char* kDefaultModel = ".models/default.onnx";
// The default model's image input is [N,3,H,W] with every dimension symbolic; see docs/MODELS.md.
const ShapeChoices kDefaultModelShapes = {{}, {{"x", Shape{1, 3, 640, 640}}}};
constexpr int kMinRuns = 10;
constexpr const char* kCudaEp = "CUDAExecutionProvider";
constexpr const char* kVulkanEp = "VulkanExecutionProvider";

using Clock = std::chrono::steady_clock;

struct BenchSettings {
  int runs = 50;
  int warmup = 5;
  double budget_seconds = 20;  // per mode
  std::set<std::string> modes = {"host", "concurrent", "io", "graph"};
};

const std::set<std::string> kModes = {"host", "concurrent", "io", "graph", "concurrent-graph", "data-parallel"};

struct Latency {
  std::string mode;
  std::vector<double> ms;  // sorted
  double runs_per_second = 0;
};

// Calls `run` for warm-up, then times it until runs or the budget are exhausted.
Latency Measure(const std::string& mode, const BenchSettings& settings, const std::function<void()>& run) {
  const auto warmup_start = Clock::now();
  for (int i = 0; i < settings.warmup; ++i) {
    run();
    if (std::chrono::duration<double>(Clock::now() - warmup_start).count() > settings.budget_seconds / 4) break;
  }
  Latency latency{mode, {}};
  const int min_runs = std::min(kMinRuns, settings.runs);
  const auto start = Clock::now();
  for (int i = 0; i < settings.runs; ++i) {
    const auto t0 = Clock::now();
    run();
    const auto t1 = Clock::now();
    latency.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    const double spent = std::chrono::duration<double>(t1 - start).count();
    if (i + 1 >= min_runs && spent > settings.budget_seconds) break;
  }
  latency.runs_per_second =
      static_cast<double>(latency.ms.size()) / std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(latency.ms.begin(), latency.ms.end());
  return latency;
}

// run(t) from threads t = 0..threads-1 at once, timing calls for the budget (at least kMinRuns). The threads
// warm up together first (--warmup runs each, at least 2), so that what concurrent runs prepare once (the
// session's extra stream sets, their library handles, step graphs) is not timed, as the single-thread modes'
// warm-up is not.
Latency MeasureConcurrent(const std::string& mode, const BenchSettings& settings, int threads,
                          const std::function<void(int thread)>& run) {
  Latency latency{mode, {}};
  std::mutex mutex;
  std::vector<std::string> errors;
  Clock::time_point start;
  std::barrier warmed(threads, [&]() noexcept { start = Clock::now(); });
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<double> mine;
      try {
        std::exception_ptr failed;
        try {
          for (int i = 0; i < std::max(settings.warmup, 2); ++i) run(t);
        } catch (...) {
          failed = std::current_exception();
        }
        warmed.arrive_and_wait();
        if (failed) std::rethrow_exception(failed);
        for (int i = 0; i < settings.runs; ++i) {
          const auto t0 = Clock::now();
          run(t);
          const auto t1 = Clock::now();
          mine.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          if (i + 1 >= kMinRuns && std::chrono::duration<double>(t1 - start).count() > settings.budget_seconds) break;
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        errors.push_back(e.what());
      }
      std::lock_guard<std::mutex> lock(mutex);
      latency.ms.insert(latency.ms.end(), mine.begin(), mine.end());
    });
  }
  for (std::thread& w : workers) w.join();
  if (!errors.empty()) Fail(ErrorCode::kRuntime, mode, ": ", errors.front());
  latency.runs_per_second =
      static_cast<double>(latency.ms.size()) / std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(latency.ms.begin(), latency.ms.end());
  return latency;
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t index = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

// A copy of `value` in `where` (the same tensor when it already lives there).
Value PlaceInput(Environment& env, const Session& session, const std::string& name, const Value& value) {
  if (!value.is_tensor()) return value;
  const MemoryInfo where = session.InputMemoryInfo(name);
  const Tensor& host = value.tensor();
  if (host.memory_info() == where) return value;
  const EpDevice* device = session.InputEpDevice(name);
  AllocatorPtr allocator = device && device->factory ? device->factory->CreateAllocator(where) : nullptr;
  if (!allocator) allocator = env.GetSharedAllocator(where);
  if (!allocator) Fail(ErrorCode::kNotImplemented, "no allocator for ", where.ToString(), " (input '", name, "')");
  Tensor placed = Tensor::Allocate(host.type(), host.shape(), allocator);
  Tensor destination[] = {placed};
  env.CopyTensors(std::span<const Tensor>(&host, 1), destination, nullptr);
  return Value(placed);
}

IoBinding BindOnce(Environment& env, Session& session, const Session::NamedValues& feeds) {
  IoBinding binding = session.CreateIoBinding();
  std::cout << "IoBinding: inputs in";
  for (const auto& [name, value] : feeds) {
    const Value placed = PlaceInput(env, session, name, value);
    binding.BindInput(name, placed);
    if (placed.is_tensor()) std::cout << " " << name << ":" << placed.tensor().memory_info().ToString();
  }
  const MemoryInfo output_memory = PrimaryEpDevice(env, session)->device_memory;
  for (const ValueInfo& output : session.outputs()) binding.BindOutput(output.name, output_memory);
  std::cout << "; outputs in " << output_memory.ToString() << "\n";
  return binding;
}

void PrintLatencies(const std::vector<Latency>& results) {
  Table table({"mode", "runs", "median ms", "p10 ms", "p90 ms", "min ms", "runs/s"});
  table.RightAlign({1, 2, 3, 4, 5, 6});
  for (const Latency& l : results) {
    table.AddRow({l.mode, std::to_string(l.ms.size()), FormatFixed(Percentile(l.ms, 0.5), 3),
                  FormatFixed(Percentile(l.ms, 0.1), 3), FormatFixed(Percentile(l.ms, 0.9), 3),
                  FormatFixed(l.ms.empty() ? 0 : l.ms.front(), 3), FormatFixed(l.runs_per_second, 1)});
  }
  std::cout << "\n";
  table.Print(std::cout);
}

BenchSettings ParseSettings(const ParsedArgs& args) {
  BenchSettings settings;
  settings.runs = args.IntOr("--runs", settings.runs, 1);
  settings.warmup = args.IntOr("--warmup", settings.warmup, 0);
  settings.budget_seconds = args.IntOr("--time-budget", 20, 1) / 3.0;  // up to three modes share the budget
  if (const std::optional<std::string> modes = args.Last("--modes")) {
    settings.modes.clear();
    std::stringstream list(*modes);
    for (std::string mode; std::getline(list, mode, ',');) {
      if (!kModes.contains(mode))
        throw UsageError("--modes: unknown mode '" + mode +
                         "' (known: host, concurrent, io, graph, concurrent-graph, data-parallel)");
      settings.modes.insert(mode);
    }
    if (settings.modes.empty()) throw UsageError("--modes names no mode");
  }
  return settings;
}

std::filesystem::path ModelPath(const ParsedArgs& args) {
  if (args.positional.size() > 1) throw UsageError("bench takes at most one MODEL");
  if (!args.positional.empty()) return args.positional[0];
  if (!std::filesystem::exists(kDefaultModel))
    Fail(ErrorCode::kIo, "no MODEL given and ", kDefaultModel, " does not exist (relative to ",
         std::filesystem::current_path().string(), "); get it with: bash scripts/setup.sh");
  return kDefaultModel;
}

// The same model in a session with explicit graph capture (the CUDA EP's enable_cuda_graph = 1: CUDA graphs; the
// Vulkan EP's enable_graph_capture = 1: recorded command buffers): the first IoBinding run warms up, the second
// captures, later runs replay. A model that cannot be captured is reported, not fatal.
void MeasureCapturedGraph(Environment& env, const std::filesystem::path& model, const ParsedArgs& args,
                          const Session::NamedValues& feeds, const BenchSettings& settings,
                          std::vector<Latency>& results) {
  SessionOptions options = MakeSessionOptions(env, args);
  const std::string ep = options.providers.empty() ? "" : options.providers.front().ep_name;
  const bool cuda = ep == kCudaEp;
  const std::string mode = cuda ? "io binding + cuda graph" : "io binding + recorded command buffers";
  if (!cuda && ep != kVulkanEp) {
    std::cout << "io binding + cuda graph: not measured: name the CUDA or Vulkan EP first with --ep cuda|vulkan\n";
    return;
  }
  // insert_or_assign with std::string operands: gcc 12 -O3 reports a false -Wrestrict for operator[] = "literal"
  options.providers.front().options.insert_or_assign(std::string(cuda ? "enable_cuda_graph" : "enable_graph_capture"),
                                                     std::string("1"));
  try {
    Session session(env, model, options);
    IoBinding binding = BindOnce(env, session, feeds);
    RunOptions run_options;
    run_options.config.insert_or_assign(std::string("gpu_graph_id"), std::string("0"));
    results.push_back(Measure(mode, settings, [&] { session.Run(binding, run_options); }));
    if (args.Last("--profile")) std::cout << "Profile (" << mode << " session): " << session.EndProfiling() << "\n";
  } catch (const Error& e) {
    std::cout << mode << ": not measured: " << e.what() << "\n";
  }
}

// `sessions` sessions with enable_cuda_graph = 1, each replaying its graph (bound once, captured in the warm-up)
// from its own thread on its own stream: how many runs per second the device completes when runs overlap and the
// host adds nothing, the ceiling for concurrent eager runs.
void MeasureConcurrentCudaGraphs(Environment& env, const std::filesystem::path& model, const ParsedArgs& args,
                                 const Session::NamedValues& feeds, const BenchSettings& settings, int sessions,
                                 std::vector<Latency>& results) {
  const std::string mode = "cuda graphs, " + std::to_string(sessions) + " sessions at once";
  SessionOptions options = MakeSessionOptions(env, args);
  if (options.providers.empty() || options.providers.front().ep_name != kCudaEp || sessions < 2) {
    std::cout << mode << ": not measured: needs --ep cuda first and --concurrency N > 1\n";
    return;
  }
  options.providers.front().options.insert_or_assign(std::string("enable_cuda_graph"), std::string("1"));
  try {
    std::vector<std::unique_ptr<Session>> replaying;
    std::vector<IoBinding> bindings;
    for (int i = 0; i < sessions; ++i) {
      replaying.push_back(std::make_unique<Session>(env, model, options));
      bindings.push_back(BindOnce(env, *replaying.back(), feeds));
    }
    RunOptions run_options;
    run_options.config.insert_or_assign(std::string("gpu_graph_id"), std::string("0"));
    results.push_back(MeasureConcurrent(mode, settings, sessions,
                                        [&](int t) { replaying[t]->Run(bindings[t], run_options); }));
  } catch (const Error& e) {
    std::cout << mode << ": not measured: " << e.what() << "\n";
  }
}

// DataParallelRunner over the first device of `ep_name`, then over all of its devices: requests per second with
// `per_device` requests in flight per device (threads submitting and waiting), the feeds in host memory.
void MeasureDataParallel(Environment& env, const std::filesystem::path& model, const ParsedArgs& args,
                         const Session::NamedValues& feeds, const BenchSettings& settings, const std::string& ep_name,
                         std::vector<Latency>& results) {
  std::vector<const EpDevice*> devices;
  for (const EpDevice* d : env.GetEpDevices())
    if (d->ep_name == ep_name) devices.push_back(d);
  const int per_device = args.IntOr("--concurrency", 2, 1);
  DataParallelOptions options;
  options.session = MakeSessionOptions(env, args);
  options.runs_per_device = per_device;
  std::vector<size_t> counts = {1};
  if (devices.size() > 1) counts.push_back(devices.size());
  for (const size_t count : counts) {
    const std::string mode = "data parallel, " + std::to_string(count) + " x " + ep_name;
    try {
      DataParallelRunner runner(env, model, std::vector<const EpDevice*>(devices.begin(), devices.begin() + count),
                                options);
      results.push_back(MeasureConcurrent(mode, settings, static_cast<int>(count) * per_device,
                                          [&](int) { runner.Submit(feeds).get(); }));
    } catch (const Error& e) {
      std::cout << mode << ": not measured: " << e.what() << "\n";
    }
  }
  if (devices.size() < 2) std::cout << "data parallel: " << ep_name << " has one device here\n";
}

}  // namespace

int BenchCommand(std::span<const std::string> args) {
  std::set<std::string> value_options = kSessionValueOptions;
  value_options.insert(
      {"--runs", "--warmup", "--time-budget", "--input", "--dim", "--shape", "--seed", "--profile", "--concurrency",
       "--modes"});
  const ParsedArgs parsed = ParseArgs(args, value_options, kSessionFlags);
  if (parsed.Has("--help")) {
    std::cout << kBenchUsage;
    return 0;
  }
  const BenchSettings settings = ParseSettings(parsed);
  const std::filesystem::path model = ModelPath(parsed);
  std::unique_ptr<Environment> env = CreateEnvironment(parsed);
  const auto creation_start = Clock::now();
  Session session(*env, model, MakeSessionOptions(*env, parsed));
  const double creation_ms = std::chrono::duration<double, std::milli>(Clock::now() - creation_start).count();
  const bool default_model = parsed.positional.empty();
  const Session::NamedValues feeds = BuildFeeds(session, parsed, default_model ? kDefaultModelShapes : ShapeChoices{});

  std::cout << "Model: " << model.string() << "\nProviders:";
  for (const std::string& ep : session.providers()) std::cout << " " << ep;
  std::cout << "\nInputs:";
  for (const auto& [name, value] : feeds)
    std::cout << " " << name << (value.is_tensor() ? value.tensor().shape().ToString() : "(sequence)");
  std::cout << "\nGraphs: " << session.GraphStatus() << "\n";

  // The first run pays for what session creation left to it (kernel plans, algorithm searches, lazy handles).
  const auto first_start = Clock::now();
  session.Run(feeds);
  const double first_run_ms = std::chrono::duration<double, std::milli>(Clock::now() - first_start).count();
  std::cout << "session creation: " << FormatFixed(creation_ms, 1) << " ms\nfirst run (host tensors): "
            << FormatFixed(first_run_ms, 1) << " ms\n";

  std::vector<Latency> results;
  const auto measured = [&](const char* mode) { return settings.modes.contains(mode); };
  if (measured("host")) results.push_back(Measure("host tensors", settings, [&] { session.Run(feeds); }));
  if (const int threads = parsed.IntOr("--concurrency", 1, 1); threads > 1 && measured("concurrent"))
    results.push_back(MeasureConcurrent("host tensors, " + std::to_string(threads) + " threads", settings, threads,
                                        [&](int) { session.Run(feeds); }));
  if (measured("io")) {
    IoBinding binding = BindOnce(*env, session, feeds);
    results.push_back(Measure("io binding", settings, [&] { session.Run(binding); }));
  }
  if (measured("graph") && !session.providers().empty() &&
      (session.providers().front() == kCudaEp || session.providers().front() == kVulkanEp))
    MeasureCapturedGraph(*env, model, parsed, feeds, settings, results);
  if (measured("concurrent-graph"))
    MeasureConcurrentCudaGraphs(*env, model, parsed, feeds, settings, parsed.IntOr("--concurrency", 1, 1), results);
  if (measured("data-parallel") && !session.providers().empty())
    MeasureDataParallel(*env, model, parsed, feeds, settings, session.providers().front(), results);
  PrintLatencies(results);
  if (session.StreamSets() > 1) std::cout << "stream sets used by concurrent runs: " << session.StreamSets() << "\n";
  if (parsed.Last("--profile")) std::cout << "\nProfile: " << session.EndProfiling() << "\n";
  return 0;
}

}  // namespace tessera::cli
