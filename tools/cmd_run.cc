// `tessera run MODEL`: one run with given or random inputs, and a summary of the outputs.
#include <chrono>
#include <iostream>

#include "cli_session.h"
#include "commands.h"
#include "random_inputs.h"
#include "table.h"
#include "value_summary.h"

namespace tessera::cli {
namespace {

constexpr const char* kRunUsage =
    "usage: tessera run MODEL [--input NAME=FILE.npy]... [--dim SYMBOL=VALUE]... [--shape NAME=D1xD2...]...\n"
    "                   [--seed N] [--output-dir DIR] [--profile PREFIX]\n"
    "                   [--ep NAME]... [--policy NAME] [--plugin NAME=PATH]... [--threads N] [--verbose]\n"
    "Runs the model once. Inputs not given are random (fixed seed); symbolic dimensions default to 1.\n"
    "--profile writes a Chrome-trace profile of the session and the run to PREFIX_<date-time>.json.\n";

void AddSummaryRow(Table& table, const std::string& name, const Tensor& tensor) {
  const TensorStats stats = ComputeStats(tensor);
  auto number = [&](double v) { return stats.numeric ? FormatFixed(v, 6) : std::string("-"); };
  table.AddRow({name, DataTypeName(tensor.type()), tensor.shape().ToString(), number(stats.min), number(stats.max),
                number(stats.mean)});
}

void PrintOutputs(const Session& session, const std::vector<Value>& outputs) {
  Table table({"output", "type", "shape", "min", "max", "mean"});
  table.RightAlign({3, 4, 5});
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    const Value& value = outputs[i];
    if (value.is_tensor()) {
      AddSummaryRow(table, name, value.tensor());
    } else if (value.is_sequence()) {
      const TensorSequence& sequence = value.sequence();
      table.AddRow({name, "sequence", "length " + std::to_string(sequence.size())});
      for (size_t j = 0; j < sequence.size(); ++j)
        AddSummaryRow(table, name + "[" + std::to_string(j) + "]", sequence[j]);
    } else {
      table.AddRow({name, "none"});
    }
  }
  table.Print(std::cout);
}

}  // namespace

int RunCommand(std::span<const std::string> args) {
  std::set<std::string> value_options = kSessionValueOptions;
  value_options.insert({"--input", "--output-dir", "--dim", "--shape", "--seed", "--profile"});
  const ParsedArgs parsed = ParseArgs(args, value_options, kSessionFlags);
  if (parsed.Has("--help")) {
    std::cout << kRunUsage;
    return 0;
  }
  if (parsed.positional.size() != 1) throw UsageError("run takes exactly one MODEL");
  std::unique_ptr<Environment> env = CreateEnvironment(parsed);
  Session session(*env, parsed.positional[0], MakeSessionOptions(*env, parsed));
  const Session::NamedValues feeds = BuildFeeds(session, parsed);

  const auto start = std::chrono::steady_clock::now();
  const std::vector<Value> outputs = session.Run(feeds);
  const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;

  std::cout << "Providers:";
  for (const std::string& ep : session.providers()) std::cout << " " << ep;
  std::cout << "\nRun: " << FormatFixed(elapsed.count(), 3) << " ms (the session's first run; see `tessera bench` for steady-state times)\n\n";
  PrintOutputs(session, outputs);

  if (auto dir = parsed.Last("--output-dir")) {
    std::filesystem::create_directories(*dir);
    for (size_t i = 0; i < outputs.size(); ++i) WriteValueAsNpy(*dir, session.outputs()[i].name, outputs[i]);
    std::cout << "\nWrote " << outputs.size() << " output(s) to " << *dir << "\n";
  }
  if (parsed.Last("--profile")) std::cout << "\nProfile: " << session.EndProfiling() << "\n";
  return 0;
}

}  // namespace tessera::cli
