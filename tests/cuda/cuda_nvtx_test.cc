// NVTX ranges as a profiler sees them. A child `tessera run` process gets the test injection library
// (tests/cuda/nvtx_recorder) through NVTX_INJECTION64_PATH, the way Nsight Systems attaches; the recorded
// ranges must be one "tessera run" range per run holding one "<op_type> <node name>" range per CUDA step, in
// execution order. A fresh process is needed: NVTX looks for a tool once per module, at its first call.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cuda/cuda_test_util.h"
#include "unit/session/graph_builder.h"

extern char** environ;

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
using CudaNvtxTest = CudaTest;

// A range as recorded: its message and the ranges pushed while it was open.
struct Range {
  std::string name;
  std::vector<Range> children;
};

// Rebuilds each thread's range tree from the recorder's "<tid> push <message>" / "<tid> pop" lines. Fails the
// test on a pop without a push or a range left open.
std::vector<Range> ReadRanges(const fs::path& record) {
  std::ifstream in(record);
  std::map<long, std::vector<Range>> open;  // per thread, the stack of open ranges (a root at the bottom)
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    long tid = 0;
    std::string event;
    fields >> tid >> event;
    std::vector<Range>& stack = open[tid];
    if (stack.empty()) stack.push_back(Range{"<thread>", {}});
    if (event == "push") {
      std::string message;
      std::getline(fields >> std::ws, message);
      stack.push_back(Range{message, {}});
    } else if (event == "pop") {
      if (stack.size() < 2) {
        ADD_FAILURE() << "thread " << tid << " popped a range it never pushed";
        continue;
      }
      Range done = std::move(stack.back());
      stack.pop_back();
      stack.back().children.push_back(std::move(done));
    } else {
      ADD_FAILURE() << "unexpected record line: " << line;
    }
  }
  std::vector<Range> roots;
  for (auto& [tid, stack] : open) {
    EXPECT_EQ(stack.size(), 1u) << "thread " << tid << " left " << stack.size() - 1 << " range(s) open";
    for (Range& r : stack.front().children) roots.push_back(std::move(r));
  }
  return roots;
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("tessera_cuda_nvtx_" + std::to_string(getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs the CLI with `args` and `extra_env` added to this process's environment; returns its exit status.
int RunCli(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  auto key_of = [](const std::string& assignment) { return assignment.substr(0, assignment.find('=')); };
  std::vector<std::string> env_strings = extra_env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string assignment = *e;
    const bool overridden = std::any_of(extra_env.begin(), extra_env.end(),
                                        [&](const std::string& x) { return key_of(x) == key_of(assignment); });
    if (!overridden) env_strings.push_back(assignment);
  }
  std::vector<std::string> argv_strings{TESSERA_CLI_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  };
  std::vector<char*> argv = pointers(argv_strings), envp = pointers(env_strings);
  pid_t child = 0;
  if (posix_spawn(&child, TESSERA_CLI_PATH, nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// "<op_type> <node name>" of every kernel step the CUDA EP runs, in execution order.
std::vector<std::string> CudaStepNames(const std::string& model) {
  Session session = MakeSession(model, SessionOptions{}.AddProvider(kCudaEpName), TestEnv());
  std::vector<std::string> names;
  for (const PartitionEntry& e : session.Partition())
    if (!e.is_copy && e.ep == kCudaEpName) names.push_back(e.op_type + " " + e.node_name);
  return names;
}

std::vector<Range> RecordedRanges(const TempDir& dir, const std::vector<std::string>& extra_env) {
  const fs::path model = dir.path() / "model.onnx", record = dir.path() / "nvtx.txt";
  std::ofstream(model, std::ios::binary) << SmallConvNetModel();
  fs::remove(record);
  std::vector<std::string> env{"NVTX_INJECTION64_PATH=" TESSERA_NVTX_RECORDER_PATH, "TESSERA_NVTX_RECORD=" + record.string()};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  EXPECT_EQ(RunCli({"run", model.string(), "--ep", "cuda"}, env), 0);
  return ReadRanges(record);
}

TEST_F(CudaNvtxTest, AnInjectedToolSeesTheRunAndEveryCudaStep) {
  TempDir dir;
  const std::vector<std::string> steps = CudaStepNames(SmallConvNetModel());
  ASSERT_GT(steps.size(), 3u);
  const std::vector<Range> roots = RecordedRanges(dir, {});
  ASSERT_EQ(roots.size(), 1u) << "expected one top-level range (the run)";
  EXPECT_EQ(roots[0].name, "tessera run");
  std::vector<std::string> children;
  for (const Range& r : roots[0].children) children.push_back(r.name);
  EXPECT_EQ(children, steps);
}

TEST_F(CudaNvtxTest, TesseraNvtxZeroKeepsRangesOffUnderAProfiler) {
  TempDir dir;
  EXPECT_TRUE(RecordedRanges(dir, {"TESSERA_NVTX=0"}).empty());
}

}  // namespace
}  // namespace tessera::test
