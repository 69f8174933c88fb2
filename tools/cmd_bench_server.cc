// `tessera bench-server MODEL`: a long-lived process that times Run(feeds) on request, so that an outside
// driver (bench/compare_ort.mjs) can alternate rounds between Tessera and another runtime in one process
// tree, with the session created once.
//
// Protocol: one command per line on stdin, one JSON line per command on stdout.
//   (at start)     {"ready":true,"load_ms":..,"providers":[..],"inputs":[..]}
//   run K          K timed runs:                        {"ms":[t1,..,tK]}
//   outputs DIR    one run, outputs as DIR/<name>.npy:  {"written":["DIR/a.npy",..]}
//   quit           exits 0 (so does end of input)
// A failing command answers {"error":"..."} and the server keeps going.
#include <chrono>
#include <iostream>
#include <sstream>

#include "cli_session.h"
#include "commands.h"
#include "npy.h"
#include "random_inputs.h"

namespace tessera::cli {
namespace {

constexpr const char* kBenchServerUsage =
    "usage: tessera bench-server MODEL [--threads N] [--opt-level LEVEL] [--ep NAME]... [--plugin NAME=PATH]...\n"
    "                            [--input NAME=FILE.npy]... [--dim SYMBOL=VALUE]... [--shape NAME=D1xD2...]...\n"
    "Reads commands on stdin and answers one JSON line each on stdout:\n"
    "  run K         time K runs of Run(feeds); answers {\"ms\":[...]}\n"
    "  outputs DIR   run once and write each output as DIR/<name>.npy\n"
    "  quit          exit\n";

using Clock = std::chrono::steady_clock;

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (c == '\n') {
      quoted += "\\n";
      continue;
    }
    quoted += c;
  }
  return quoted + "\"";
}

std::string JsonStrings(const std::vector<std::string>& items) {
  std::string list = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) list += ',';
    list += JsonString(items[i]);
  }
  list += ']';
  return list;
}

std::string TimeRuns(Session& session, const Session::NamedValues& feeds, int count) {
  std::ostringstream out;
  out.precision(6);
  out << std::fixed << "{\"ms\":[";
  for (int i = 0; i < count; ++i) {
    const auto start = Clock::now();
    session.Run(feeds);
    out << (i ? "," : "") << std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  }
  out << "]}";
  return out.str();
}

std::string WriteOutputs(Session& session, const Session::NamedValues& feeds, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::vector<Value> outputs = session.Run(feeds);
  std::vector<std::string> written;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].is_tensor()) continue;
    const std::filesystem::path file = dir / (session.outputs()[i].name + ".npy");
    WriteNpy(file, outputs[i].tensor());
    written.push_back(file.string());
  }
  return "{\"written\":" + JsonStrings(written) + "}";
}

// Answers one command line; returns false on quit.
bool Serve(Session& session, const Session::NamedValues& feeds, const std::string& line) {
  std::istringstream words(line);
  std::string command;
  words >> command;
  if (command.empty()) return true;
  if (command == "quit") return false;
  try {
    if (command == "run") {
      int count = 0;
      if (!(words >> count) || count < 1) throw UsageError("'run' expects a count >= 1");
      std::cout << TimeRuns(session, feeds, count) << std::endl;
    } else if (command == "outputs") {
      std::string dir;
      if (!(words >> dir)) throw UsageError("'outputs' expects a directory");
      std::cout << WriteOutputs(session, feeds, dir) << std::endl;
    } else {
      throw UsageError("unknown command '" + command + "' (run K | outputs DIR | quit)");
    }
  } catch (const std::exception& e) {
    std::cout << "{\"error\":" << JsonString(e.what()) << "}" << std::endl;
  }
  return true;
}

}  // namespace

int BenchServerCommand(std::span<const std::string> args) {
  std::set<std::string> value_options = kSessionValueOptions;
  value_options.insert({"--input", "--dim", "--shape", "--seed"});
  const ParsedArgs parsed = ParseArgs(args, value_options, kSessionFlags);
  if (parsed.Has("--help")) {
    std::cout << kBenchServerUsage;
    return 0;
  }
  if (parsed.positional.size() != 1) throw UsageError("bench-server takes exactly one MODEL");
  const auto load_start = Clock::now();
  std::unique_ptr<Environment> env = CreateEnvironment(parsed);
  Session session(*env, parsed.positional[0], MakeSessionOptions(*env, parsed));
  const Session::NamedValues feeds = BuildFeeds(session, parsed);
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - load_start).count();

  std::vector<std::string> inputs;
  for (const auto& [name, value] : feeds)
    inputs.push_back(name + (value.is_tensor() ? value.tensor().shape().ToString() : "(sequence)"));
  std::cout << "{\"ready\":true,\"load_ms\":" << load_ms << ",\"providers\":" << JsonStrings(session.providers())
            << ",\"inputs\":" << JsonStrings(inputs) << "}" << std::endl;
  std::string line;
  while (std::getline(std::cin, line))
    if (!Serve(session, feeds, line)) break;
  return 0;
}

}  // namespace tessera::cli
