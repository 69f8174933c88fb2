// How CLI commands get an Environment and SessionOptions from their arguments.
//
// Plugins: every libtessera_<name>.so beside the executable is registered as "<name>" (a trailing
// "_ep" dropped) except the testing EP, which is registered only when `--ep testing` or a --plugin
// names it. `--plugin name=path` registers more. A plugin beside the binary that fails to load is
// reported as a warning and skipped; an explicitly named one is an error.
//
// EP names given to --ep: "cpu" -> CPUExecutionProvider; a full type ("CUDAExecutionProvider") as
// is; any other short name matches the EP whose type starts with it, case-insensitively
// ("testing" -> TestingExecutionProvider, "cuda" -> CUDAExecutionProvider).
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "cli_args.h"
#include "tessera/tessera.h"

namespace tessera::cli {

// Value options and flags understood by CreateEnvironment / MakeSessionOptions.
extern const std::set<std::string> kSessionValueOptions;  // --ep --policy --plugin --threads --opt-level
extern const std::set<std::string> kSessionFlags;         // --verbose

std::filesystem::path ExecutableDir();
std::unique_ptr<Environment> CreateEnvironment(const ParsedArgs& args);
// Enables profiling when `--profile PREFIX` was given (only commands that accept it pass it).
SessionOptions MakeSessionOptions(const Environment& env, const ParsedArgs& args);
// Resolves a --ep name against the registered EPs; throws UsageError listing them when none matches.
std::string EpTypeFromName(const Environment& env, const std::string& name);
// The EP device a session's first provider runs on (the CPU device when CPU is first).
const EpDevice* PrimaryEpDevice(const Environment& env, const Session& session);

}  // namespace tessera::cli
