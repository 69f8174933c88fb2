// Command-line parsing shared by the subcommands: positionals, repeatable `--key value` (or
// `--key=value`) options and boolean flags. Anything unexpected throws UsageError (exit code 2).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;  // "--ep" -> "cpu", in command-line order per key
  std::set<std::string> flags;                      // "--verbose"

  bool Has(const std::string& flag) const { return flags.count(flag) != 0; }
  std::vector<std::string> All(const std::string& key) const;
  std::optional<std::string> Last(const std::string& key) const;
  // The last value of `key` as an integer >= minimum, or `fallback` when absent.
  int IntOr(const std::string& key, int fallback, int minimum = 0) const;
};

// `value_options` take a value; `flag_options` do not. "--help"/"-h" is always a flag.
ParsedArgs ParseArgs(std::span<const std::string> args, const std::set<std::string>& value_options,
                     const std::set<std::string>& flag_options);

// Splits "name=value"; throws UsageError naming `option` when there is no '=' or either side is empty.
std::pair<std::string, std::string> SplitAssignment(const std::string& text, const std::string& option);

}  // namespace tessera::cli
