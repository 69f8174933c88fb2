// `tessera`: inspect, partition, run and benchmark ONNX models from the command line.
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "tessera/status.h"

namespace {

constexpr const char* kUsage = R"(usage: tessera <command> [options]

commands:
  devices                      hardware devices, EP devices and their memory
  inspect MODEL                metadata, opsets, inputs/outputs, op histogram
  partition MODEL              which EP runs each node, and the copies between memories
  run MODEL                    run once (random inputs unless --input) and summarize the outputs
  bench [MODEL]                latency of Run(feeds) and Run(IoBinding) (default .models/default.onnx)
  bench-server MODEL           timed runs on request over stdin/stdout (driven by bench/compare_ort.mjs)
  profile-summary FILE.json    time per op type in a profile written by run/bench --profile

session options (partition, run, bench):
  --ep NAME                    EP in priority order (repeatable): cpu, testing, cuda, vulkan, or a full EP type
  --ep-option KEY=VALUE        provider option for the first --ep (repeatable), e.g. use_tf32=0
  --config KEY=VALUE           session config entry (repeatable), e.g. session.prepare_static_shapes=1
  --policy NAME                EP selection policy when no --ep: default, prefer_cpu, prefer_gpu,
                               prefer_npu, max_performance, max_efficiency
  --plugin NAME=PATH           register an EP plugin library (repeatable); libtessera_*.so files
                               beside this executable (or in the installed
                               plugin folder, PREFIX/lib/tessera) are registered automatically
  --threads N                  intra-op threads (0 = one per core)
  --opt-level LEVEL            none | basic | extended | all
  --verbose                    verbose logging

run options:
  --input NAME=FILE.npy        input value (repeatable); other inputs are random (seed --seed, default 0)
  --dim SYMBOL=VALUE           value for a symbolic dimension of random inputs (default 1)
  --shape NAME=D1xD2...        whole shape of a random input (e.g. x=1x3x640x640)
  --output-dir DIR             write each output as DIR/<name>.npy
  --profile PREFIX             (run, bench) write a Chrome-trace profile PREFIX_<date-time>.json

bench options:
  --runs N (50)  --warmup N (5)  --time-budget SECONDS (20, shared by the modes)
  --input, --dim, --shape, --seed as for run

Run `tessera <command> --help` for the command's own usage.
)";

int Dispatch(const std::string& command, const std::vector<std::string>& args) {
  using namespace tessera::cli;
  if (command == "devices") return DevicesCommand(args);
  if (command == "inspect") return InspectCommand(args);
  if (command == "partition") return PartitionCommand(args);
  if (command == "run") return RunCommand(args);
  if (command == "bench") return BenchCommand(args);
  if (command == "bench-server") return BenchServerCommand(args);
  if (command == "profile-summary") return ProfileSummaryCommand(args);
  throw UsageError("unknown command '" + command + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    return Dispatch(command, args);
  } catch (const tessera::cli::UsageError& e) {
    std::cerr << "tessera: usage error: " << e.what() << "\nRun 'tessera --help' for usage.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tessera: error: " << e.what() << "\n";
    return 1;
  }
}
