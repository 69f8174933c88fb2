// A plain-text table with aligned columns, for command output.
//
//   Table t({"node", "op", "ep"});
//   t.AddRow({"conv1", "Conv", "CPUExecutionProvider"});
//   t.Print(std::cout);
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Columns listed here are right-aligned (numbers).
  void RightAlign(std::vector<size_t> columns) { right_aligned_ = std::move(columns); }
  // Rows shorter than the header are padded with empty cells.
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> right_aligned_;
};

// "1.23 ms" style formatting with `precision` digits after the point.
std::string FormatFixed(double value, int precision);

}  // namespace tessera::cli
