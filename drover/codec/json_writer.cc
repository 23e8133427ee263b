#include "drover/codec/json_writer.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "drover/codec/json.h"

namespace drover::codec {
namespace {

// Printable ASCII other than '"' and '\\': written as it is, as nlohmann writes it.
bool Plain(std::string_view text) {
  for (const char c : text) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

void JsonWriter::Separate() {
  if (need_comma_) out_ += ',';
  need_comma_ = true;
}

void JsonWriter::BeginObject() {
  Separate();
  out_ += '{';
  need_comma_ = false;
}

void JsonWriter::EndObject() {
  out_ += '}';
  need_comma_ = true;
}

void JsonWriter::BeginArray() {
  Separate();
  out_ += '[';
  need_comma_ = false;
}

void JsonWriter::EndArray() {
  out_ += ']';
  need_comma_ = true;
}

void JsonWriter::Key(std::string_view key) {
  String(key);
  out_ += ':';
  need_comma_ = false;
}

void JsonWriter::String(std::string_view value) {
  Separate();
  if (Plain(value)) {
    out_ += '"';
    out_ += value;
    out_ += '"';
    return;
  }
  // Escapes, non-ASCII and invalid UTF-8 (rare in names and messages): nlohmann's own escaping,
  // so the bytes are DumpJson's.
  out_ += DumpJson(nlohmann::json(std::string(value)));
}

void JsonWriter::Int(std::int64_t value) {
  Separate();
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_.append(buffer, end);
}

void JsonWriter::Double(double value) {
  Separate();
  out_ += DumpJson(nlohmann::json(value));  // nlohmann's shortest form ("0.0", "1.5e-06", null)
}

void JsonWriter::Bool(bool value) {
  Separate();
  out_ += value ? "true" : "false";
}

void JsonWriter::Null() {
  Separate();
  out_ += "null";
}

}  // namespace drover::codec
