// LoadYamlDocuments' guards: deep nesting refused at its bracket, before yaml-cpp reads it.

#include "drover/spec/yaml_load.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "drover/common/nesting.h"

namespace drover::spec {
namespace {

TEST(LoadYamlDocuments, RefusesDeepNestingAtTheBracketThatGoesTooDeep) {
  const std::string text =
      "kind: Job\nscript: " + std::string(kMaxNestingDepth + 1, '[') + std::string(10, ']');
  LoadedYaml loaded = LoadYamlDocuments(text);
  ASSERT_TRUE(loaded.error);
  EXPECT_EQ(loaded.error->message, "the document is nested too deeply (more than 499 levels)");
  EXPECT_EQ(loaded.error->mark.line, 1);
  EXPECT_EQ(loaded.error->mark.column, 8 + kMaxNestingDepth);
  EXPECT_TRUE(loaded.documents.empty());
}

TEST(LoadYamlDocuments, AcceptsNestingUpToTheLimit) {
  LoadedYaml loaded =
      LoadYamlDocuments(std::string(kMaxNestingDepth, '[') + std::string(kMaxNestingDepth, ']'));
  EXPECT_FALSE(loaded.error) << loaded.error->message;
  EXPECT_EQ(loaded.documents.size(), 1u);
}

// The process's data segment (VmData: heap and private mappings) in bytes; 0 if unknown.
[[maybe_unused]] rlim_t DataBytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmData:") {
      rlim_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

// Runs in a child process: loads `text` with the data segment allowed to grow by only 32 MiB,
// and exits 0 if it was refused as nested too deeply, 1 on any other outcome (out of memory
// included), 2 if the budget cannot be set.
[[noreturn, maybe_unused]] void LoadNestedWithinBudget(const std::string& text) {
  const rlim_t used = DataBytes();
  const rlimit limit{used + (32u << 20), used + (32u << 20)};
  if (used == 0 || setrlimit(RLIMIT_DATA, &limit) != 0) std::_Exit(2);
  LoadedYaml loaded = LoadYamlDocuments(text);
  std::_Exit(loaded.error && loaded.error->message == NestedTooDeeply() ? 0 : 1);
}

// Issue 15, finding 2: 1 MB of '[' made yaml-cpp hold ~230 MB (its scanner reads every token
// before refusing the depth), per request. With a 32 MiB budget the text must be refused as
// nested, not run out of memory.
TEST(LoadYamlDocuments, RefusesAMegabyteOfBracketsWithinASmallMemoryBudget) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan's allocator maps its memory outside what RLIMIT_DATA allows";
#else
  const std::string text(1 << 20, '[');
  EXPECT_EXIT(LoadNestedWithinBudget(text), ::testing::ExitedWithCode(0), "");
#endif
}

}  // namespace
}  // namespace drover::spec
