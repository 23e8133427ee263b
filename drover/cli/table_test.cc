#include "drover/cli/table.h"

#include <gtest/gtest.h>

namespace drover::cli {
namespace {

TEST(Table, AlignsColumnsAndTrimsTrailingSpace) {
  Table table({"ID", "NAME", "STATE"});
  table.AddRow({"1", "prep", "succeeded"});
  table.AddRow({"12", "train-large", ""});
  EXPECT_EQ(table.Render(),
            "ID  NAME         STATE\n"
            "1   prep         succeeded\n"
            "12  train-large\n");
}

TEST(Table, EscapesControlCharactersAndInvalidUtf8InCells) {
  Table table({"OWNER", "MESSAGE"});
  table.AddRow({"eve\x1b[2J", "a\tb\r\n\x7f"});
  table.AddRow({"caf\xc3\xa9",
                "\xc2\x9b"
                "31m \xff"});  // U+009B is CSI on some terminals
  EXPECT_EQ(table.Render(),
            "OWNER       MESSAGE\n"
            "eve\\x1b[2J  a\\x09b\\x0d\\x0a\\x7f\n"
            "caf\xc3\xa9       \\xc2\\x9b31m \\xff\n");
}

}  // namespace
}  // namespace drover::cli
