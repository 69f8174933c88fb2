#include "cli_session.h"

#include "random_inputs.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <vector>

namespace tessera::cli {

const std::set<std::string> kSessionValueOptions = {"--ep",      "--ep-option", "--config",   "--policy",
                                                    "--plugin",  "--threads",   "--opt-level"};
const std::set<std::string> kSessionFlags = {"--verbose"};

namespace {

constexpr const char* kCpuEp = "CPUExecutionProvider";
constexpr const char* kTestingEp = "TestingExecutionProvider";
constexpr const char* kTestingLibrary = "libtessera_testing_ep.so";

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// "libtessera_cuda.so" -> "cuda", "libtessera_testing_ep.so" -> "testing"; "" for other files.
std::string RegistrationNameOf(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  const std::string prefix = "libtessera_", suffix = ".so";
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) return "";
  std::string core = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (core.ends_with("_ep") && core.size() > 3) core.resize(core.size() - 3);
  return core;
}

bool AsksForTestingEp(const ParsedArgs& args) {
  for (const std::string& ep : args.All("--ep")) {
    const std::string lower = Lowercase(ep);
    if (lower == "testing" || lower == Lowercase(kTestingEp)) return true;
  }
  return false;
}

std::filesystem::path Canonical(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : canonical;
}

// Libraries already registered through --plugin (by name or by file) are not registered twice.
struct ExplicitPlugins {
  std::set<std::string> names;
  std::set<std::filesystem::path> files;  // canonical
};

// The folders searched for plugins: the executable's own (a build tree), then the installed plugin folder
// relative to it (TESSERA_PLUGIN_DIR_FROM_BIN, e.g. "../lib/tessera", set by CMake from the install layout).
std::vector<std::filesystem::path> PluginDirs() {
  std::vector<std::filesystem::path> dirs = {ExecutableDir()};
#ifdef TESSERA_PLUGIN_DIR_FROM_BIN
  dirs.push_back((ExecutableDir() / TESSERA_PLUGIN_DIR_FROM_BIN).lexically_normal());
#endif
  return dirs;
}

void RegisterBesideBinary(Environment& env, const ExplicitPlugins& explicit_plugins, bool include_testing) {
  std::vector<std::filesystem::path> libraries;
  std::set<std::string> found;
  for (const std::filesystem::path& dir : PluginDirs()) {
    std::error_code ec;
    std::vector<std::filesystem::path> in_dir;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (!entry.is_regular_file()) continue;
      const std::string name = RegistrationNameOf(entry.path());
      if (name.empty() || found.count(name) || explicit_plugins.names.count(name) ||
          explicit_plugins.files.count(Canonical(entry.path())))
        continue;
      if (entry.path().filename() == kTestingLibrary && !include_testing) continue;
      in_dir.push_back(entry.path());
    }
    std::sort(in_dir.begin(), in_dir.end());  // registration order decides GetEpDevices order
    for (const auto& path : in_dir) found.insert(RegistrationNameOf(path));  // the first folder's copy wins
    libraries.insert(libraries.end(), in_dir.begin(), in_dir.end());
  }
  for (const auto& path : libraries) {
    try {
      env.RegisterEpLibrary(RegistrationNameOf(path), path);
    } catch (const Error& e) {
      std::cerr << "tessera: warning: skipping plugin " << path.string() << ": " << e.what() << "\n";
    }
  }
}

OptimizationLevel ParseOptimizationLevel(const std::string& text) {
  if (text == "none" || text == "0") return OptimizationLevel::kNone;
  if (text == "basic" || text == "1") return OptimizationLevel::kBasic;
  if (text == "extended" || text == "2") return OptimizationLevel::kExtended;
  if (text == "all" || text == "99") return OptimizationLevel::kAll;
  throw UsageError("--opt-level expects none|basic|extended|all, got '" + text + "'");
}

}  // namespace

std::filesystem::path ExecutableDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : self.parent_path();
}

std::unique_ptr<Environment> CreateEnvironment(const ParsedArgs& args) {
  auto env = std::make_unique<Environment>(args.Has("--verbose") ? LogLevel::kVerbose : LogLevel::kWarning);
  ExplicitPlugins explicit_plugins;
  for (const std::string& plugin : args.All("--plugin")) {
    auto [name, path] = SplitAssignment(plugin, "--plugin");
    env->RegisterEpLibrary(name, path);
    explicit_plugins.names.insert(name);
    explicit_plugins.files.insert(Canonical(path));
  }
  const bool testing_registered = env->FindFactory(kTestingEp) != nullptr;
  RegisterBesideBinary(*env, explicit_plugins, AsksForTestingEp(args) && !testing_registered);
  return env;
}

std::string EpTypeFromName(const Environment& env, const std::string& name) {
  const std::string lower = Lowercase(name);
  if (lower == "cpu") return kCpuEp;
  std::vector<std::string> known;
  for (const EpDevice* device : env.GetEpDevices()) {
    if (device->ep_name == name) return name;
    if (Lowercase(device->ep_name).starts_with(lower)) return device->ep_name;
    if (std::find(known.begin(), known.end(), device->ep_name) == known.end()) known.push_back(device->ep_name);
  }
  std::string list;
  for (const std::string& ep : known) list += (list.empty() ? "" : ", ") + ep;
  throw UsageError("unknown EP '" + name + "' (available: " + list + ")");
}

SessionOptions MakeSessionOptions(const Environment& env, const ParsedArgs& args) {
  SessionOptions options;
  for (const std::string& ep : args.All("--ep")) options.AddProvider(EpTypeFromName(env, ep));
  // The CPU EP is the implicit fallback: listing it last changes nothing, so leave it to the session -- unless it
  // is the only EP named and --ep-option gives it options.
  const bool cpu_with_options = options.providers.size() == 1 && options.providers[0].ep_name == kCpuEp &&
                                !args.All("--ep-option").empty();
  while (!cpu_with_options && !options.providers.empty() && options.providers.back().ep_name == kCpuEp)
    options.providers.pop_back();
  for (const std::string& option : args.All("--ep-option")) {
    if (options.providers.empty()) throw UsageError("--ep-option needs an --ep to apply to");
    auto [key, value] = SplitAssignment(option, "--ep-option");
    options.providers.front().options[key] = value;
  }
  for (const std::string& entry : args.All("--config")) {
    auto [key, value] = SplitAssignment(entry, "--config");
    options.config[key] = value;
  }
  if (auto policy = args.Last("--policy")) {
    try {
      options.policy = ParseEpSelectionPolicy(*policy);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  // --dim SYMBOL=VALUE fixes that symbolic dim in the session too (free dimension overrides), so that a model
  // whose inputs all become static is prepared at creation.
  for (const auto& [symbol, value] : ParseShapeChoices(args).dims) options.free_dimension_overrides[symbol] = value;
  options.intra_op_threads = args.IntOr("--threads", 0);
  if (auto level = args.Last("--opt-level")) options.optimization_level = ParseOptimizationLevel(*level);
  if (args.Has("--verbose")) options.log_level = LogLevel::kVerbose;
  if (auto prefix = args.Last("--profile")) {
    options.enable_profiling = true;
    options.profile_file_prefix = *prefix;
  }
  return options;
}

const EpDevice* PrimaryEpDevice(const Environment& env, const Session& session) {
  const std::vector<std::string> providers = session.providers();
  const std::string first = providers.empty() ? kCpuEp : providers.front();
  for (const EpDevice* device : env.GetEpDevices())
    if (device->ep_name == first) return device;
  Fail(ErrorCode::kInvalidArgument, "no EP device for ", first);
}

}  // namespace tessera::cli
