// The expectation file: which conformance cases are known not to pass on an EP, and why.
//
// One line per case, tab-separated: `folder/test_name<TAB>fail|unsupported<TAB>reason`. Blank lines
// and lines starting with '#' are ignored. A case not listed must pass; every listed case carries a
// reason (an issue, a missing kernel, a known numeric difference).
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace tessera::conformance {

enum class CaseStatus { kPass, kFail, kUnsupported };
const char* CaseStatusName(CaseStatus status);

struct Expectation {
  CaseStatus status = CaseStatus::kFail;
  std::string reason;
};

// Keyed by "folder/test_name".
using Expectations = std::map<std::string, Expectation>;

// Throws Error(kIo) when the file cannot be read, kInvalidArgument naming the line when it is malformed.
Expectations ReadExpectations(const std::filesystem::path& path);
// Writes `header` (each line prefixed with "# ") and then the entries sorted by key.
void WriteExpectations(const std::filesystem::path& path, const Expectations& expectations, const std::string& header);
// Makes `text` fit on one expectation line: tabs and newlines become spaces, long text is shortened.
std::string OneLineReason(const std::string& text);

}  // namespace tessera::conformance
