#pragma once

// A small CSV reader for the trace loaders: a header that maps column names to indexes, records
// read one at a time with their line numbers, and errors that name the file, line and column.
//
// Format (RFC 4180 with two allowances): the first record is the header; fields are separated by
// ','; a field may be quoted ("a, b", "say ""hi""") and a quoted field may span lines; unquoted
// fields and column names are trimmed of spaces and tabs; LF and CRLF line ends are accepted; a
// UTF-8 byte-order mark is skipped; blank lines are skipped. Every record must have as many
// fields as the header.
//
// Errors are kInvalidArgument, except kNotFound for a missing file. Messages start with
// "FILE:LINE: " (the 1-based line where the record starts) and, where one column is at fault,
// continue with "column 'NAME': ".

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"

namespace drover::sim {

class CsvReader {
 public:
  // Reads the file and its header. kNotFound if it does not exist; kInvalidArgument for a file
  // without a header, an empty or duplicate column name, or a malformed header record.
  static Result<CsvReader> Open(const std::string& path);
  // The same over `text`; `file_name` is what messages call it.
  static Result<CsvReader> FromText(std::string text, std::string file_name);

  const std::string& file_name() const { return file_name_; }
  const std::vector<std::string>& columns() const { return columns_; }

  // The index of column `name`, or -1 when the header lacks it.
  int Find(std::string_view name) const;
  // Like Find, but a missing column is an error:
  // "FILE:1: column 'NAME': missing from the header (its columns are a, b, c)".
  Result<int> Require(std::string_view name) const;

  // Advances to the next record: true when there is one, false at the end of the input.
  // kInvalidArgument for an unterminated quoted field, text after a closing quote, or a record
  // with more or fewer fields than the header (fewer names the first missing column).
  Result<bool> Next();

  // The line where the current record starts (1 is the header's).
  int line() const { return line_; }
  // Field `column` of the current record; "" for -1 (a column Find did not find).
  std::string_view Field(int column) const;
  bool Empty(int column) const { return Field(column).empty(); }

  // "FILE:LINE: column 'NAME': message" for the current record as an Error (kInvalidArgument).
  Error ColumnError(int column, std::string_view message) const;
  // "FILE:LINE: message" for the current record.
  Error RowError(std::string_view message) const;

  // Field `column` as a whole number without sign ("0", "8152"). Errors: empty ("must not be
  // empty"), anything else ("expected a non-negative whole number, found 'x'"), too large.
  Result<std::int64_t> NonNegativeInt(int column) const;
  // Field `column` as a decimal number ("1.5", "-2", "1e3"); errors as above.
  Result<double> Number(int column) const;

 private:
  CsvReader(std::string text, std::string file_name)
      : text_(std::move(text)), file_name_(std::move(file_name)) {}

  // Reads one record into fields_ from pos_; false at the end of the input.
  Result<bool> ReadRecord();

  std::string text_;
  std::string file_name_;
  std::size_t pos_ = 0;
  int next_line_ = 1;  // the line pos_ is on
  int line_ = 0;       // the current record's first line
  std::vector<std::string> columns_;
  std::vector<std::string> fields_;
  std::size_t field_count_ = 0;  // fields_ in use (the vector is reused between records)
};

}  // namespace drover::sim
