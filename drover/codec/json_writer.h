#pragma once

// codec::JsonWriter: writes a JSON document straight into a string, without building a tree
// (nlohmann::json), for answers of thousands of objects (GET /v1/jobs: a tree of 5,000 job
// summaries costs more to build and free than to write).
//
// Its bytes equal codec::DumpJson's of the same document as long as the caller writes each
// object's keys in sorted order (nlohmann's objects are std::maps): strings are escaped as
// DumpJson escapes them (invalid UTF-8 replaced by U+FFFD) and doubles printed as it prints them.
// The caller writes a well-formed document (each Key followed by one value, every Begin closed by
// its End); the writer does not check. Not thread-safe; it borrows `out`, which must outlive it.

#include <cstdint>
#include <string>
#include <string_view>

namespace drover::codec {

class JsonWriter {
 public:
  // Appends to `out`.
  explicit JsonWriter(std::string& out) : out_(out) {}

  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  // An object's key; the next call writes its value.
  void Key(std::string_view key);

  void String(std::string_view value);
  void Int(std::int64_t value);
  void Double(double value);
  void Bool(bool value);
  void Null();

  // An object's member: Key(key), then its value.
  void StringMember(std::string_view key, std::string_view value) {
    Key(key);
    String(value);
  }
  void IntMember(std::string_view key, std::int64_t value) {
    Key(key);
    Int(value);
  }
  void DoubleMember(std::string_view key, double value) {
    Key(key);
    Double(value);
  }

 private:
  // A comma before a value or key that follows another in its container.
  void Separate();

  std::string& out_;
  bool need_comma_ = false;
};

}  // namespace drover::codec
