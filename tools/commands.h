// The `tessera` subcommands. Each takes the arguments after its name and returns the exit code:
// 0 success, 1 runtime error (printed by the caller from a thrown tessera::Error), 2 usage error
// (thrown as cli::UsageError).
#pragma once

#include <span>
#include <string>

namespace tessera::cli {

int DevicesCommand(std::span<const std::string> args);
int InspectCommand(std::span<const std::string> args);
int PartitionCommand(std::span<const std::string> args);
int RunCommand(std::span<const std::string> args);
int BenchCommand(std::span<const std::string> args);
int BenchServerCommand(std::span<const std::string> args);
int ProfileSummaryCommand(std::span<const std::string> args);

}  // namespace tessera::cli
