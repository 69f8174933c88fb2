#include "table.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace tessera::cli {

void Table::Print(std::ostream& out) const {
  std::vector<size_t> widths(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) widths[c] = header_[c].size();
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], row[c].size());

  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const std::string pad(widths[c] - std::min(widths[c], cell.size()), ' ');
      const bool right = std::find(right_aligned_.begin(), right_aligned_.end(), c) != right_aligned_.end();
      line += right ? pad + cell : cell + pad;
      if (c + 1 < widths.size()) line += "  ";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  };
  print_row(header_);
  std::vector<std::string> rule;
  for (size_t width : widths) rule.push_back(std::string(width, '-'));
  print_row(rule);
  for (const auto& row : rows_) print_row(row);
}

std::string FormatFixed(double value, int precision) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(precision) << value;
  return os.str();
}

}  // namespace tessera::cli
