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

}  // namespace
}  // namespace drover::cli
