#include "drover/sim/trace/csv.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <utility>

#include "drover/common/filesystem.h"

namespace drover::sim {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (IsBlank(s.front()) || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (IsBlank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string JoinColumns(const std::vector<std::string>& columns) {
  std::string out;
  for (const std::string& c : columns) {
    if (!out.empty()) out += ", ";
    out += c;
  }
  return out;
}

}  // namespace

Result<CsvReader> CsvReader::Open(const std::string& path) {
  DROVER_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  return FromText(std::move(text), path);
}

Result<CsvReader> CsvReader::FromText(std::string text, std::string file_name) {
  CsvReader reader(std::move(text), std::move(file_name));
  if (reader.text_.starts_with("\xEF\xBB\xBF")) reader.pos_ = 3;
  DROVER_ASSIGN_OR_RETURN(bool header, reader.ReadRecord());
  if (!header) {
    return InvalidArgument(fmt::format(
        "{}:1: empty file: expected a header line naming the columns", reader.file_name_));
  }
  for (std::size_t i = 0; i < reader.field_count_; ++i) {
    std::string name(TrimBlanks(reader.fields_[i]));
    if (name.empty()) {
      return InvalidArgument(fmt::format("{}:{}: column {} of the header has no name",
                                         reader.file_name_, reader.line_, i + 1));
    }
    if (reader.Find(name) >= 0) {
      return InvalidArgument(fmt::format("{}:{}: column '{}': appears twice in the header",
                                         reader.file_name_, reader.line_, name));
    }
    reader.columns_.push_back(std::move(name));
  }
  return reader;
}

int CsvReader::Find(std::string_view name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

Result<int> CsvReader::Require(std::string_view name) const {
  const int index = Find(name);
  if (index >= 0) return index;
  return InvalidArgument(
      fmt::format("{}:1: column '{}': missing from the header (its columns are {})", file_name_,
                  name, JoinColumns(columns_)));
}

Result<bool> CsvReader::Next() {
  Result<bool> read = ReadRecord();
  if (!read || !*read) return read;
  if (field_count_ < columns_.size()) {
    return tl::unexpected(
        ColumnError(static_cast<int>(field_count_),
                    fmt::format("missing: the record has {} fields, the header {}", field_count_,
                                columns_.size())));
  }
  if (field_count_ > columns_.size()) {
    return tl::unexpected(RowError(
        fmt::format("{} fields, but the header has {} columns", field_count_, columns_.size())));
  }
  return true;
}

Result<bool> CsvReader::ReadRecord() {
  const std::string_view text = text_;
  // Skip blank lines.
  while (pos_ < text.size()) {
    std::size_t end = text.find('\n', pos_);
    if (end == std::string_view::npos) end = text.size();
    if (!TrimBlanks(text.substr(pos_, end - pos_)).empty()) break;
    pos_ = end == text.size() ? end : end + 1;
    if (end < text.size()) ++next_line_;
  }
  if (pos_ >= text.size()) return false;

  line_ = next_line_;
  field_count_ = 0;
  auto column_name = [&](std::size_t index) {
    return index < columns_.size() ? fmt::format("column '{}'", columns_[index])
                                   : fmt::format("field {}", index + 1);
  };
  while (true) {
    if (field_count_ == fields_.size()) fields_.emplace_back();
    std::string& field = fields_[field_count_];
    field.clear();
    std::size_t i = pos_;
    while (i < text.size() && IsBlank(text[i])) ++i;
    if (i < text.size() && text[i] == '"') {
      ++i;
      while (true) {
        if (i >= text.size()) {
          return InvalidArgument(fmt::format("{}:{}: {}: unterminated quoted field", file_name_,
                                             line_, column_name(field_count_)));
        }
        const char c = text[i];
        if (c == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (c == '\n') ++next_line_;
        field += c;
        ++i;
      }
      while (i < text.size() && (IsBlank(text[i]) || text[i] == '\r')) ++i;
      if (i < text.size() && text[i] != ',' && text[i] != '\n') {
        return InvalidArgument(fmt::format("{}:{}: {}: unexpected text after the closing quote",
                                           file_name_, line_, column_name(field_count_)));
      }
    } else {
      std::size_t end = i;
      while (end < text.size() && text[end] != ',' && text[end] != '\n') ++end;
      field.assign(TrimBlanks(text.substr(i, end - i)));
      i = end;
    }
    ++field_count_;
    if (i < text.size() && text[i] == ',') {
      pos_ = i + 1;
      continue;
    }
    // End of the record: a newline or the end of the input.
    if (i < text.size()) {
      ++next_line_;
      ++i;
    }
    pos_ = i;
    return true;
  }
}

std::string_view CsvReader::Field(int column) const {
  if (column < 0 || static_cast<std::size_t>(column) >= field_count_) return {};
  return fields_[static_cast<std::size_t>(column)];
}

Error CsvReader::ColumnError(int column, std::string_view message) const {
  const std::string name = column >= 0 && static_cast<std::size_t>(column) < columns_.size()
                               ? columns_[static_cast<std::size_t>(column)]
                               : fmt::format("#{}", column + 1);
  return Error{ErrorCode::kInvalidArgument,
               fmt::format("{}:{}: column '{}': {}", file_name_, line_, name, message),
               {}};
}

Error CsvReader::RowError(std::string_view message) const {
  return Error{
      ErrorCode::kInvalidArgument, fmt::format("{}:{}: {}", file_name_, line_, message), {}};
}

Result<std::int64_t> CsvReader::NonNegativeInt(int column) const {
  const std::string_view text = Field(column);
  if (text.empty()) return tl::unexpected(ColumnError(column, "must not be empty"));
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return tl::unexpected(ColumnError(column, fmt::format("number is too large: {}", text)));
  }
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return tl::unexpected(
        ColumnError(column, fmt::format("expected a non-negative whole number, found '{}'", text)));
  }
  return value;
}

Result<double> CsvReader::Number(int column) const {
  const std::string_view text = Field(column);
  if (text.empty()) return tl::unexpected(ColumnError(column, "must not be empty"));
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return tl::unexpected(ColumnError(column, fmt::format("expected a number, found '{}'", text)));
  }
  return value;
}

}  // namespace drover::sim
