#include "drover/cli/cli.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "drover/cli/commands.h"

namespace drover::cli {
namespace {

// VerbOf on `words` (after the program's name), with the global options Main has.
std::string Verb(std::vector<std::string> words) {
  CLI::App app;
  ClientFlags client;
  AddGlobalOptions(app, client);
  words.insert(words.begin(), "drover");
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  return std::string(VerbOf(app, static_cast<int>(argv.size()), argv.data()));
}

// Main builds the parser of the verb VerbOf names, so it must find the verb wherever the global
// options put it, and never take an option's value for it.
TEST(VerbOf, IsTheFirstWordThatIsNeitherAnOptionNorAGlobalOptionsValue) {
  EXPECT_EQ(Verb({"get", "5"}), "get");
  EXPECT_EQ(Verb({"--server", "http://h:1", "get", "5"}), "get");
  EXPECT_EQ(Verb({"--server=http://h:1", "ls"}), "ls");
  EXPECT_EQ(Verb({"-o", "json", "--ca", "ca.pem", "queues"}), "queues");
  EXPECT_EQ(Verb({"-ojson", "nodes"}), "nodes");
  EXPECT_EQ(Verb({"--token", "ls", "get", "5"}), "get") << "a value that is a verb's name";
  EXPECT_EQ(Verb({"submit", "--server", "http://h:1", "f.yaml"}), "submit");
  EXPECT_EQ(Verb({"--bogus", "ls"}), "ls") << "the parse itself refuses --bogus";
  EXPECT_EQ(Verb({"lss"}), "lss") << "Main then builds every verb for the error";
}

TEST(VerbOf, IsNoneForTheWholeCommandLinesHelpOrWithoutAVerb) {
  EXPECT_EQ(Verb({}), "");
  EXPECT_EQ(Verb({"--help"}), "");
  EXPECT_EQ(Verb({"-h", "submit"}), "");
  EXPECT_EQ(Verb({"--server", "http://h:1"}), "");
  EXPECT_EQ(Verb({"--token"}), "") << "an option missing its value";
}

}  // namespace
}  // namespace drover::cli
