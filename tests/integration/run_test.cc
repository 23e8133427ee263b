// `drover run`: the embedded control plane running the quickstart pipeline to the end.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

class Run : public IntegrationTest {};

TEST_F(Run, QuickstartSucceeds) {
  CommandResult run = RunDrover({"run", SourceDir() + "/examples/quickstart.yaml", "--gpus",
                                 "4xH100-80GB", "--data", dir_.Sub("data")},
                                dir_.path(), std::chrono::milliseconds(300'000));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  // The final table: a header line starting with JOB, then one row per job.
  std::istringstream out(run.out);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(out, line)) {
    std::vector<std::string> words = Words(line);
    if (!words.empty() && words[0] == "JOB" && words.size() > 2 && words[2] == "STATE") {
      in_table = true;
      rows.clear();
      continue;
    }
    if (in_table) {
      if (words.size() < 3 || words[0].find_first_not_of("0123456789") != std::string::npos) {
        in_table = false;
        continue;
      }
      rows.push_back(words);
    }
  }
  ASSERT_EQ(rows.size(), 3u) << run.out;
  const char* names[] = {"prep", "train", "eval"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rows[i][1], names[i]) << run.out;
    EXPECT_EQ(rows[i][2], "succeeded") << run.out;
  }
}

}  // namespace
}  // namespace drover::integration
