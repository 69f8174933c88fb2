#include "expectations.h"

#include <fstream>
#include <sstream>

#include "tessera/status.h"

namespace tessera::conformance {
namespace {

constexpr size_t kMaxReasonLength = 240;

CaseStatus ParseStatus(const std::string& text, const std::filesystem::path& path, int line_number) {
  if (text == "fail") return CaseStatus::kFail;
  if (text == "unsupported") return CaseStatus::kUnsupported;
  Fail(ErrorCode::kInvalidArgument, path.string(), ":", line_number, ": status must be 'fail' or 'unsupported', got '",
       text, "'");
}

}  // namespace

const char* CaseStatusName(CaseStatus status) {
  switch (status) {
    case CaseStatus::kPass: return "pass";
    case CaseStatus::kFail: return "fail";
    case CaseStatus::kUnsupported: return "unsupported";
  }
  return "?";
}

Expectations ReadExpectations(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) Fail(ErrorCode::kIo, "cannot open expectation file '", path.string(), "'");
  Expectations expectations;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab1 = line.find('\t');
    const size_t tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string::npos || tab2 + 1 >= line.size())
      Fail(ErrorCode::kInvalidArgument, path.string(), ":", line_number,
           ": expected 'folder/test<TAB>status<TAB>reason' with a non-empty reason");
    const std::string key = line.substr(0, tab1);
    Expectation e{ParseStatus(line.substr(tab1 + 1, tab2 - tab1 - 1), path, line_number), line.substr(tab2 + 1)};
    if (!expectations.emplace(key, std::move(e)).second)
      Fail(ErrorCode::kInvalidArgument, path.string(), ":", line_number, ": '", key, "' is listed twice");
  }
  return expectations;
}

void WriteExpectations(const std::filesystem::path& path, const Expectations& expectations, const std::string& header) {
  std::ofstream out(path);
  if (!out) Fail(ErrorCode::kIo, "cannot write expectation file '", path.string(), "'");
  std::istringstream header_lines(header);
  std::string line;
  while (std::getline(header_lines, line)) out << "# " << line << "\n";
  for (const auto& [key, e] : expectations) out << key << "\t" << CaseStatusName(e.status) << "\t" << e.reason << "\n";
  if (!out) Fail(ErrorCode::kIo, "failed writing '", path.string(), "'");
}

std::string OneLineReason(const std::string& text) {
  std::string reason;
  for (char c : text) {
    const char mapped = (c == '\t' || c == '\n' || c == '\r') ? ' ' : c;
    if (mapped == ' ' && (reason.empty() || reason.back() == ' ')) continue;
    reason.push_back(mapped);
  }
  while (!reason.empty() && reason.back() == ' ') reason.pop_back();
  if (reason.size() > kMaxReasonLength) reason = reason.substr(0, kMaxReasonLength - 3) + "...";
  return reason.empty() ? "no reason given" : reason;
}

}  // namespace tessera::conformance
