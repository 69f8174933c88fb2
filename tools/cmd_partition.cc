// `tessera partition MODEL`: where each node runs after optimization, and the copies between memories.
#include <iostream>

#include "cli_session.h"
#include "commands.h"
#include "table.h"

namespace tessera::cli {
namespace {

constexpr const char* kPartitionUsage =
    "usage: tessera partition MODEL [--ep NAME]... [--policy NAME] [--plugin NAME=PATH]... [--opt-level L]\n"
    "Creates a session and prints, in execution order, the EP of every node and each copy step.\n";

void PrintSummary(const std::vector<PartitionEntry>& entries) {
  std::map<std::string, int> nodes_per_ep;
  int copies = 0;
  for (const PartitionEntry& e : entries) {
    if (e.is_copy)
      ++copies;
    else
      ++nodes_per_ep[e.ep];
  }
  std::cout << "\n";
  for (const auto& [ep, count] : nodes_per_ep) std::cout << ep << ": " << count << " nodes\n";
  std::cout << "copies: " << copies << "\n";
}

}  // namespace

int PartitionCommand(std::span<const std::string> args) {
  const ParsedArgs parsed = ParseArgs(args, kSessionValueOptions, kSessionFlags);
  if (parsed.Has("--help")) {
    std::cout << kPartitionUsage;
    return 0;
  }
  if (parsed.positional.size() != 1) throw UsageError("partition takes exactly one MODEL");
  std::unique_ptr<Environment> env = CreateEnvironment(parsed);
  Session session(*env, parsed.positional[0], MakeSessionOptions(*env, parsed));

  Table table({"#", "node", "op", "ep / copy"});
  table.RightAlign({0});
  const std::vector<PartitionEntry> entries = session.Partition();
  for (size_t i = 0; i < entries.size(); ++i) {
    const PartitionEntry& e = entries[i];
    const std::string where = e.is_copy ? "copy " + e.copy_from + " -> " + e.copy_to : e.ep;
    table.AddRow({std::to_string(i), e.node_name, e.is_copy ? "(copy)" : e.op_type, where});
  }
  std::cout << "Providers:";
  for (const std::string& ep : session.providers()) std::cout << " " << ep;
  std::cout << "\n\n";
  table.Print(std::cout);
  PrintSummary(entries);
  return 0;
}

}  // namespace tessera::cli
