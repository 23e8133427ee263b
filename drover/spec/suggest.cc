#include "drover/spec/suggest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace drover::spec {
namespace {

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::size_t CommonPrefix(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && Lower(a[n]) == Lower(b[n])) ++n;
  return n;
}

}  // namespace

std::size_t EditDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  // d[i][j]: distance between a[0, i) and b[0, j); three rolling rows for transpositions.
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = Lower(a[i - 1]) == Lower(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) &&
          Lower(a[i - 2]) == Lower(b[j - 1])) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::optional<std::string> Suggest(std::string_view word,
                                   const std::vector<std::string>& candidates,
                                   std::size_t max_distance) {
  std::optional<std::string> best;
  std::size_t best_distance = max_distance + 1;
  std::size_t best_prefix = 0;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = EditDistance(word, candidate);
    if (distance > max_distance || distance >= word.size()) continue;
    const std::size_t prefix = CommonPrefix(word, candidate);
    if (distance < best_distance || (distance == best_distance && prefix > best_prefix)) {
      best = candidate;
      best_distance = distance;
      best_prefix = prefix;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& choices,
                       std::string_view expected, HintForm form,
                       const std::map<std::string, std::string>& aliases) {
  std::optional<std::string> suggestion = Suggest(word, choices);
  if (!suggestion) {
    if (auto alias = aliases.find(std::string(word)); alias != aliases.end()) {
      suggestion = alias->second;
    }
  }
  const std::string then = expected.empty() ? "" : fmt::format("; {}", expected);
  if (!suggestion) return then;
  switch (form) {
    case HintForm::kAsideThenExpected:
      return fmt::format(" (did you mean '{}'?){}", *suggestion, then);
    case HintForm::kSuggestionOrExpected:
      return fmt::format("; did you mean '{}'?", *suggestion);
  }
  return then;
}

}  // namespace drover::spec
