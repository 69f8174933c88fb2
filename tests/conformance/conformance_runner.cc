// tessera_conformance: the ONNX backend test data (node/, pytorch-converted/, pytorch-operator/,
// simple/) run on one EP and checked against an expectation file. See tests/conformance/README.md.
//
// Exit codes: 0 when every case passes or is listed in the expectation file, 1 when a case that is
// not listed does not pass (a regression) or on a setup error, 2 for usage errors.
#include <algorithm>
#include <chrono>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <vector>

#include "case_runner.h"
#include "expectations.h"

namespace tessera::conformance {
namespace {

constexpr const char* kUsage = R"(usage: tessera_conformance --data DIR [--ep NAME] [--expect FILE] [--filter TEXT]
                           [--list-failures] [--write-expect FILE] [--plugin NAME=PATH]... [--threads N]
                           [--time-limit SECONDS] [--ep-option KEY=VALUE]... [--config KEY=VALUE]...
                           [--precision TYPE] [--verbose]
  --data DIR          ONNX backend test data (e.g. /usr/share/libonnx-testdata/data)
  --ep NAME           cpu (default), testing, or an EP type such as CUDAExecutionProvider
  --expect FILE       cases expected not to pass; any other case that does not pass is a regression
  --filter TEXT       only cases whose "folder/test_name" contains TEXT
  --list-failures     print every case that did not pass, with its reason
  --write-expect FILE write the expectation file for the current results (reasons from --expect kept)
  --plugin NAME=PATH  register an EP plugin library
  --ep-option K=V     provider option for --ep (repeatable), e.g. use_tf32=0
  --config K=V        session config entry (repeatable), e.g. session.float16_in_float32=0
  --time-limit S      per-case limit in seconds (default 30), checked between data sets
  --precision TYPE    float16 or bfloat16: run every case with float32 inputs or outputs lowered to TYPE
                      (cases without float32 are not applicable and not counted)
  --verbose           print every case as it runs
)";

const std::vector<std::string> kFolders = {"node", "pytorch-converted", "pytorch-operator", "simple"};

struct Options {
  std::string ep = "cpu";
  std::filesystem::path data;
  std::optional<std::filesystem::path> expect, write_expect;
  std::string filter;
  bool list_failures = false;
  bool verbose = false;
  std::vector<std::pair<std::string, std::string>> plugins;
  ProviderOptions ep_options;
  std::map<std::string, std::string> config;
  int threads = 0;
  double time_limit_s = 30;
  DataType precision = DataType::kUndefined;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double ParseNumber(const std::string& option, const std::string& text) {
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw UsageError(option + " needs a non-negative number, got '" + text + "'");
}

std::pair<std::string, std::string> ParseAssignment(const std::string& option, const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError(option + " expects NAME=VALUE, got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::pair<std::string, std::string> ParsePlugin(const std::string& text) { return ParseAssignment("--plugin", text); }

Options ParseOptions(int argc, char** argv) {
  Options o;
  using Setter = std::function<void(const std::string&)>;
  const std::map<std::string, Setter> with_value = {
      {"--ep", [&](const std::string& v) { o.ep = v; }},
      {"--data", [&](const std::string& v) { o.data = v; }},
      {"--expect", [&](const std::string& v) { o.expect = v; }},
      {"--write-expect", [&](const std::string& v) { o.write_expect = v; }},
      {"--filter", [&](const std::string& v) { o.filter = v; }},
      {"--threads", [&](const std::string& v) { o.threads = static_cast<int>(ParseNumber("--threads", v)); }},
      {"--time-limit", [&](const std::string& v) { o.time_limit_s = ParseNumber("--time-limit", v); }},
      {"--plugin", [&](const std::string& v) { o.plugins.push_back(ParsePlugin(v)); }},
      {"--ep-option", [&](const std::string& v) { o.ep_options.insert(ParseAssignment("--ep-option", v)); }},
      {"--config", [&](const std::string& v) { o.config.insert(ParseAssignment("--config", v)); }},
      {"--precision",
       [&](const std::string& v) {
         if (v == "float16") o.precision = DataType::kFloat16;
         else if (v == "bfloat16") o.precision = DataType::kBFloat16;
         else throw UsageError("--precision takes float16 or bfloat16, got '" + v + "'");
       }},
  };
  const std::map<std::string, bool*> flags = {{"--list-failures", &o.list_failures}, {"--verbose", &o.verbose}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (auto flag = flags.find(arg); flag != flags.end()) {
      *flag->second = true;
      continue;
    }
    auto option = with_value.find(arg);
    if (option == with_value.end()) throw UsageError("unknown option '" + arg + "'");
    if (i + 1 >= argc) throw UsageError(arg + " needs a value");
    option->second(argv[++i]);
  }
  if (o.data.empty()) throw UsageError("--data is required");
  return o;
}

std::filesystem::path ExecutableDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : self.parent_path();
}

std::string EpType(const std::string& name) {
  if (name == "cpu") return "CPUExecutionProvider";
  if (name == "testing") return "TestingExecutionProvider";
  if (name == "vulkan") return "VulkanExecutionProvider";
  return name;
}

std::unique_ptr<Environment> CreateEnvironment(const Options& o) {
  auto env = std::make_unique<Environment>(o.verbose ? LogLevel::kInfo : LogLevel::kError);
  for (const auto& [name, path] : o.plugins) env->RegisterEpLibrary(name, path);
  if (o.ep == "testing" && env->FindFactory(EpType("testing")) == nullptr)
    env->RegisterEpLibrary("testing", ExecutableDir() / "libtessera_testing_ep.so");
  if (o.ep == "vulkan" && env->FindFactory(EpType("vulkan")) == nullptr)
    env->RegisterEpLibrary("vulkan", ExecutableDir() / "libtessera_vulkan.so");
  return env;
}

CaseSettings MakeSettings(const Options& o) {
  CaseSettings settings;
  // ONNX 1.12's backend runner compares every folder with rtol 1e-3, atol 1e-7 (onnx/backend/test/
  // loader: data.json may override them, and only the real/ models have data.json).
  settings.tolerance = Tolerance{1e-3, 1e-7};
  settings.time_limit_s = o.time_limit_s;
  settings.lower_to = o.precision;
  settings.session_options.intra_op_threads = o.threads;
  settings.session_options.log_level = LogLevel::kError;
  settings.session_options.config = o.config;
  if (o.ep != "cpu") settings.session_options.AddProvider(EpType(o.ep), o.ep_options);
  return settings;
}

struct Case {
  std::string folder, key;  // key = "folder/test_name"
  std::filesystem::path dir;
};

std::vector<Case> DiscoverCases(const Options& o) {
  std::vector<Case> cases;
  for (const std::string& folder : kFolders) {
    const std::filesystem::path root = o.data / folder;
    if (!std::filesystem::is_directory(root)) {
      std::cout << "note: " << root.string() << " does not exist; skipped\n";
      continue;
    }
    std::vector<std::filesystem::path> dirs;
    for (const auto& entry : std::filesystem::directory_iterator(root))
      if (entry.is_directory() && std::filesystem::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      std::string key = folder + "/" + dir.filename().string();
      if (key.find(o.filter) != std::string::npos) cases.push_back({folder, std::move(key), dir});
    }
  }
  return cases;
}

void NoteRealModels(const Options& o) {
  const std::filesystem::path real = o.data / "real";
  if (!std::filesystem::is_directory(real)) return;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(real)) count += entry.is_directory() ? 1 : 0;
  std::cout << "note: real/ (" << count << " cases) skipped: each has only data.json pointing at a model to download\n";
}

// Reasons name files relative to the data directory so that expectation files do not depend on it.
std::string WithoutDataDir(std::string reason, const std::filesystem::path& data) {
  const std::string prefix = (data / "").string();
  for (size_t pos; (pos = reason.find(prefix)) != std::string::npos;) reason.erase(pos, prefix.size());
  return reason;
}

struct FolderCounts {
  int passed = 0, failed = 0, unsupported = 0, not_applicable = 0;
};

struct Report {
  std::map<std::string, FolderCounts> folders;
  std::vector<std::pair<std::string, CaseResult>> not_passing;
  int regressions = 0;
};

// Compares one result with the expectations and prints what changed.
void Judge(const Case& c, const CaseResult& r, const Expectations& expected, const Options& o, Report& report) {
  FolderCounts& counts = report.folders[c.folder];
  if (r.not_applicable) {
    ++counts.not_applicable;
    return;
  }
  auto listed = expected.find(c.key);
  if (r.status == CaseStatus::kPass) {
    ++counts.passed;
    if (listed != expected.end()) std::cout << "now passing: remove from expectations: " << c.key << "\n";
    return;
  }
  (r.status == CaseStatus::kFail ? counts.failed : counts.unsupported)++;
  report.not_passing.emplace_back(c.key, r);
  if (listed == expected.end()) {
    ++report.regressions;
    std::cout << "REGRESSION " << c.key << ": " << CaseStatusName(r.status) << ": " << r.reason << "\n";
  } else if (listed->second.status != r.status && o.verbose) {
    std::cout << "note: " << c.key << " is now " << CaseStatusName(r.status) << " (listed as "
              << CaseStatusName(listed->second.status) << "): " << r.reason << "\n";
  }
}

void PrintSummary(const Report& report, double seconds) {
  FolderCounts total;
  std::cout << "\n"
            << std::left << std::setw(20) << "folder" << std::right << std::setw(8) << "passed" << std::setw(8)
            << "failed" << std::setw(13) << "unsupported" << std::setw(8) << "total"
            << "\n";
  auto row = [](const std::string& name, const FolderCounts& c) {
    std::cout << std::left << std::setw(20) << name << std::right << std::setw(8) << c.passed << std::setw(8)
              << c.failed << std::setw(13) << c.unsupported << std::setw(8) << (c.passed + c.failed + c.unsupported)
              << "\n";
  };
  for (const auto& [folder, counts] : report.folders) {
    row(folder, counts);
    total.passed += counts.passed;
    total.failed += counts.failed;
    total.unsupported += counts.unsupported;
    total.not_applicable += counts.not_applicable;
  }
  row("all", total);
  std::cout << "\n"
            << total.passed << " passed, " << total.failed << " failed\n"
            << total.unsupported << " unsupported\n"
            << report.regressions << " regressions (not passing and not in the expectation file)\n"
            << (total.not_applicable ? std::to_string(total.not_applicable) + " not applicable (no float32 to lower)\n"
                                     : std::string())
            << "time: " << std::fixed << std::setprecision(1) << seconds << " s\n";
}

// A reason for a new expectation entry: the shortest description that says what is missing.
std::string GenericReason(const CaseResult& r, const Options& o) {
  static const std::regex missing_op(R"(op (\S+) \(domain ([^,]*), opset (\d+)\) is not implemented)");
  static const std::regex old_opset(R"(default-domain opset (\d+) is not supported \(supported: ([0-9.]+)\))");
  static const std::regex missing_types(
      R"(no kernel for op (\S+) \(domain ([^,]*), opset (\d+)\) with input types (\([^)]*\)))");
  const std::string ep = o.ep == "cpu" ? "CPU" : o.ep;
  std::smatch m;
  if (r.status == CaseStatus::kUnsupported && std::regex_search(r.reason, m, missing_op))
    return "unsupported: op " + m[1].str() + " (" + m[2].str() + ", opset " + m[3].str() + ") has no " + ep + " kernel";
  if (r.status == CaseStatus::kUnsupported && std::regex_search(r.reason, m, missing_types))
    return "unsupported: op " + m[1].str() + " (" + m[2].str() + ", opset " + m[3].str() + ") has no " + ep +
           " kernel for input types " + m[4].str();
  if (std::regex_search(r.reason, m, old_opset))
    return "model loader rejects default-domain opset " + m[1].str() + " (supported: " + m[2].str() + ")";
  return r.reason;
}

void WriteExpectFile(const Options& o, const Report& report, const Expectations& old, const std::vector<Case>& cases) {
  std::set<std::string> ran;
  for (const Case& c : cases) ran.insert(c.key);
  Expectations updated;
  for (const auto& [key, e] : old)
    if (!ran.count(key)) updated[key] = e;  // not run this time (--filter): keep as is
  for (const auto& [key, r] : report.not_passing) {
    auto previous = old.find(key);
    const bool keep = previous != old.end() && previous->second.status == r.status;
    updated[key] = Expectation{r.status, keep ? previous->second.reason : GenericReason(r, o)};
  }
  WriteExpectations(*o.write_expect, updated,
                    "Conformance cases expected NOT to pass on the " + o.ep +
                        " EP: folder/test<TAB>fail|unsupported<TAB>reason.\n"
                        "Any case not listed must pass. Regenerate with tessera_conformance --write-expect FILE\n"
                        "(see tests/conformance/README.md); replace generic reasons with specific ones.");
  std::cout << "wrote " << updated.size() << " expectations to " << o.write_expect->string() << "\n";
}

int Main(int argc, char** argv) {
  const Options o = ParseOptions(argc, argv);
  Expectations expected;
  if (o.expect) {
    if (std::filesystem::exists(*o.expect) || !o.write_expect)
      expected = ReadExpectations(*o.expect);
    else
      std::cout << "note: " << o.expect->string() << " does not exist yet; starting empty\n";
  }
  std::unique_ptr<Environment> env = CreateEnvironment(o);
  const CaseSettings settings = MakeSettings(o);
  NoteRealModels(o);
  const std::vector<Case> cases = DiscoverCases(o);

  const auto start = std::chrono::steady_clock::now();
  Report report;
  size_t done = 0;
  for (const Case& c : cases) {
    // Progress on stderr (the report on stdout stays the same): every 100 cases, unless each case is printed.
    if (!o.verbose && done > 0 && done % 100 == 0)
      std::cerr << "tessera_conformance: " << done << "/" << cases.size() << " cases, "
                << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count()
                << " s\n";
    ++done;
    if (o.verbose) std::cout << c.key << " ... " << std::flush;
    CaseResult result = RunCase(*env, c.dir, settings);
    result.reason = WithoutDataDir(result.reason, o.data);
    if (o.verbose)
      std::cout << CaseStatusName(result.status) << " (" << std::fixed << std::setprecision(2) << result.seconds
                << " s)" << (result.reason.empty() ? "" : ": " + result.reason) << "\n";
    Judge(c, result, expected, o, report);
  }
  if (o.list_failures) {
    std::cout << "\nNot passing:\n";
    for (const auto& [key, r] : report.not_passing)
      std::cout << key << "\t" << CaseStatusName(r.status) << "\t" << r.reason << "\n";
  }
  PrintSummary(report, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (o.write_expect) WriteExpectFile(o, report, expected, cases);
  return report.regressions > 0 ? 1 : 0;
}

}  // namespace
}  // namespace tessera::conformance

int main(int argc, char** argv) {
  try {
    return tessera::conformance::Main(argc, argv);
  } catch (const tessera::conformance::UsageError& e) {
    std::cerr << "tessera_conformance: usage error: " << e.what() << "\n" << tessera::conformance::kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tessera_conformance: error: " << e.what() << "\n";
    return 1;
  }
}
