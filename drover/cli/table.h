#pragma once

#include <string>
#include <vector>

namespace drover::cli {

// A plain-text table for people: left-aligned columns separated by two spaces. Cells hold what
// other users wrote (names, owners, messages), so Render writes every control character (C0,
// DEL, C1) and every byte that is not UTF-8 as \xNN: nothing in a cell can move the cursor,
// clear the screen or start a terminal escape sequence.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace drover::cli
