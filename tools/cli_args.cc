#include "cli_args.h"

namespace tessera::cli {

std::vector<std::string> ParsedArgs::All(const std::string& key) const {
  std::vector<std::string> values;
  auto [begin, end] = options.equal_range(key);
  for (auto it = begin; it != end; ++it) values.push_back(it->second);
  return values;
}

std::optional<std::string> ParsedArgs::Last(const std::string& key) const {
  std::vector<std::string> values = All(key);
  if (values.empty()) return std::nullopt;
  return values.back();
}

int ParsedArgs::IntOr(const std::string& key, int fallback, int minimum) const {
  std::optional<std::string> text = Last(key);
  if (!text) return fallback;
  try {
    size_t used = 0;
    const int value = std::stoi(*text, &used);
    if (used == text->size() && value >= minimum) return value;
  } catch (const std::exception&) {
  }
  throw UsageError(key + " needs an integer >= " + std::to_string(minimum) + ", got '" + *text + "'");
}

ParsedArgs ParseArgs(std::span<const std::string> args, const std::set<std::string>& value_options,
                     const std::set<std::string>& flag_options) {
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      parsed.flags.insert("--help");
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    if (flag_options.count(key) && eq == std::string::npos) {
      parsed.flags.insert(key);
    } else if (value_options.count(key)) {
      if (eq != std::string::npos) {
        parsed.options.emplace(key, arg.substr(eq + 1));
      } else if (i + 1 < args.size()) {
        parsed.options.emplace(key, args[++i]);
      } else {
        throw UsageError(key + " needs a value");
      }
    } else {
      throw UsageError("unknown option '" + arg + "'");
    }
  }
  return parsed;
}

std::pair<std::string, std::string> SplitAssignment(const std::string& text, const std::string& option) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(option + " expects name=value, got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace tessera::cli
