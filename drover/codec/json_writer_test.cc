#include "drover/codec/json_writer.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drover/codec/json.h"

namespace drover::codec {
namespace {

using ::nlohmann::json;

// Strings that need escaping or are not plain ASCII, each written as DumpJson writes it.
const std::vector<std::string>& AwkwardStrings() {
  static const std::vector<std::string> strings = {
      "",
      "plain text 123",
      "quote \" and backslash \\",
      "tab\tnewline\nreturn\rbell\x07 nul" + std::string(1, '\0') + "end",
      "\x1f\x7f",
      "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x9a\x80",  // valid UTF-8: passed through
      "bad \xff\xfe utf-8 \xc3",                    // invalid: U+FFFD, as DumpJson does
      "/slash and </script>",
  };
  return strings;
}

TEST(JsonWriter, StringsAreEscapedAsDumpJsonEscapesThem) {
  for (const std::string& text : AwkwardStrings()) {
    std::string out;
    JsonWriter writer(out);
    writer.String(text);
    EXPECT_EQ(out, DumpJson(json(text)))
        << json(text).dump(-1, ' ', true, json::error_handler_t::replace);
  }
}

TEST(JsonWriter, NumbersAreWrittenAsDumpJsonWritesThem) {
  const std::vector<std::int64_t> ints = {0, -1, 42, std::numeric_limits<std::int64_t>::min(),
                                          std::numeric_limits<std::int64_t>::max()};
  for (const std::int64_t value : ints) {
    std::string out;
    JsonWriter(out).Int(value);
    EXPECT_EQ(out, DumpJson(json(value)));
  }
  const std::vector<double> doubles = {
      0.0, 1.5, 1.0 / 3.0, 1e-7, 1e21, -2.0, std::numeric_limits<double>::infinity()};
  for (const double value : doubles) {
    std::string out;
    JsonWriter(out).Double(value);
    EXPECT_EQ(out, DumpJson(json(value))) << value;
  }
}

TEST(JsonWriter, NestedDocumentEqualsDumpJsonOfItsTree) {
  std::string out;
  JsonWriter writer(out);
  writer.BeginObject();
  writer.Key("a");
  writer.BeginArray();
  writer.BeginObject();
  writer.EndObject();
  writer.BeginArray();
  writer.EndArray();
  writer.Int(1);
  writer.Bool(true);
  writer.Bool(false);
  writer.Null();
  writer.BeginObject();
  writer.Key("k");
  writer.String("v");
  writer.Key("m");
  writer.Double(0.25);
  writer.EndObject();
  writer.EndArray();
  writer.Key("b");
  writer.Null();
  writer.Key("c \"q\"");
  writer.BeginObject();
  writer.Key("x");
  writer.Int(-3);
  writer.EndObject();
  writer.EndObject();
  const json tree = {
      {"a", {json::object(), json::array(), 1, true, false, nullptr, {{"k", "v"}, {"m", 0.25}}}},
      {"b", nullptr},
      {"c \"q\"", {{"x", -3}}}};
  EXPECT_EQ(out, DumpJson(tree));
}

TEST(JsonWriter, AppendsToWhatTheStringHeld) {
  std::string out = "prefix:";
  JsonWriter writer(out);
  writer.BeginArray();
  writer.Int(1);
  writer.Int(2);
  writer.EndArray();
  EXPECT_EQ(out, "prefix:[1,2]");
}

}  // namespace
}  // namespace drover::codec
