#include "drover/cli/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "drover/common/utf8.h"

namespace drover::cli {
namespace {

// `text` with control characters and bytes that are not UTF-8 written as \xNN.
std::string Printable(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = Utf8SequenceLength(text, i);
    const auto lead = static_cast<unsigned char>(text[i]);
    const bool c0 = length == 1 && (lead < 0x20 || lead == 0x7F);
    const bool c1 = length == 2 && lead == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;
    if (length == 0 || c0 || c1) {
      const std::size_t escaped = std::max<std::size_t>(length, 1);
      for (std::size_t k = 0; k < escaped; ++k) {
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i + k]));
      }
      i += escaped;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace

std::string Table::Render() const {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(rows_.size());
  for (const auto& row : rows_) {
    std::vector<std::string>& printable = rows.emplace_back();
    for (const std::string& cell : row) printable.push_back(Printable(cell));
  }
  std::vector<std::size_t> widths(headers_.size());
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  measure(headers_);
  for (const auto& row : rows) measure(row);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      line += cell;
      if (i + 1 < widths.size()) line += std::string(widths[i] - cell.size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(headers_);
  for (const auto& row : rows) emit(row);
  return out;
}

}  // namespace drover::cli
