#pragma once

// "Did you mean" suggestions for misspelled field names, enum values and job names, and the
// message tail every spec parser ends an "unknown ..." diagnostic with.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drover::spec {

// Optimal string alignment distance (Damerau-Levenshtein with adjacent transpositions, each
// substring edited at most once), compared case-insensitively (ASCII).
std::size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` when its distance is at most `max_distance` and smaller than
// the length of `word` (so that "x" does not suggest every one-letter key). Ties go to the
// candidate sharing the longest prefix with `word` ("gpu" -> "gpus", not "cpu"), then to the one
// listed first. nullopt when none is close enough.
std::optional<std::string> Suggest(std::string_view word,
                                   const std::vector<std::string>& candidates,
                                   std::size_t max_distance = 2);

// Where DidYouMean puts the suggestion and what is valid (`expected`).
enum class HintForm {
  // " (did you mean 'X'?); EXPECTED", or "; EXPECTED" without a suggestion: what is valid is
  // always said, and the suggestion is an aside before it. For enum values, whose choices are few.
  kAsideThenExpected,
  // "; did you mean 'X'?", or "; EXPECTED" without a suggestion: what is valid is said only when
  // nothing is suggested. For field, job, stage, output and parameter names.
  kSuggestionOrExpected,
};

// The tail of a message about `word`, which is none of `choices` ("unknown goal 'maximise'" +
// tail): the closest choice (Suggest with the default distance) as "did you mean", and
// `expected`, what is valid ("expected maximize or minimize", "it declares loss, accuracy"),
// placed as `form` says; an empty `expected` adds nothing. `aliases` maps words too far from
// their choice for the edit distance (cmd -> command) to it; an alias is suggested when no
// choice is close. Both forms quote the suggestion as 'X'.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& choices,
                       std::string_view expected, HintForm form,
                       const std::map<std::string, std::string>& aliases = {});

}  // namespace drover::spec
