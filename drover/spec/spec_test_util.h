#pragma once

// Helpers for the spec parsers' tests. Test-only; header-only so the library does not carry it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "drover/spec/parse.h"

namespace drover::spec::testing {

// Options naming the input "jobs.yaml".
inline ParseOptions Options() {
  ParseOptions options;
  options.file_name = "jobs.yaml";
  return options;
}

// Every diagnostic of ParseJobsWithDiagnostics(text) as "FILE:LINE:COL: error: FIELD: message";
// expects no job to be handed out when there is one.
inline std::vector<std::string> Errors(std::string_view text,
                                       const ParseOptions& options = Options()) {
  ParseOutput out = ParseJobsWithDiagnostics(text, options);
  std::vector<std::string> lines;
  for (const Diagnostic& d : out.diagnostics) lines.push_back(d.ToString());
  if (!lines.empty()) {
    EXPECT_THAT(out.jobs, ::testing::IsEmpty());
  }
  return lines;
}

// `text` with 1 to 8 random edits: a byte replaced, inserted (from `alphabet`) or erased. For
// fuzzing parsers with near-valid input. `text` and `alphabet` must not be empty.
inline std::string Mutate(std::string text, const std::string& alphabet, std::mt19937& rng) {
  std::uniform_int_distribution<int> edits(1, 8);
  for (int e = edits(rng); e > 0; --e) {
    std::uniform_int_distribution<std::size_t> at(0, text.size() - 1);
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    switch (rng() % 3) {
      case 0:
        text[at(rng)] = alphabet[pick(rng)];
        break;
      case 1:
        text.insert(at(rng), 1, alphabet[pick(rng)]);
        break;
      default:
        text.erase(at(rng), 1);
        break;
    }
  }
  return text;
}

}  // namespace drover::spec::testing
