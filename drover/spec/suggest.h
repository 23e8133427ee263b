#pragma once

// "Did you mean" suggestions for misspelled field names, enum values and job names.

#include <cstddef>
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

}  // namespace drover::spec
