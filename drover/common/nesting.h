#pragma once

// A linear pre-check of how deeply a JSON or YAML text nests its '[' and '{' collections, for
// the parsers to refuse absurd nesting before they build anything.
//
// Why: yaml-cpp refuses a document nested 500 levels deep, but only after its scanner has read
// every token to the end (an opening bracket may start a key, so no token is released before
// the text is read), about 230 bytes per character: 230 MB for 1 MB of '['. nlohmann's parser
// builds every level before it fails (about 76 MB for 1 MB of '['). Both free it all, but the
// peak per request is what one client could make the server pay, on every request thread at
// once. This check costs one pass and no allocation.
//
// Pure; thread-safe.

#include <cstddef>
#include <optional>
#include <string_view>

namespace drover {

// The deepest nesting the JSON and YAML parsers accept: yaml-cpp 0.7's own limit (a document
// with 500 nested collections is refused by its DepthGuard).
inline constexpr int kMaxNestingDepth = 499;

enum class NestingSyntax {
  // Brackets inside JSON strings ("...", with backslash escapes) do not count: exact for JSON.
  kJson,
  // Every '[' and '{' counts and every ']' and '}' closes one: YAML's quoting depends on context
  // (a plain scalar may hold a quote), so the count is an upper bound of the real nesting; text
  // that holds more than kMaxNestingDepth unclosed brackets in its strings is refused too.
  kYaml,
};

// The byte offset of the first '[' or '{' that opens level `max_depth` + 1, or nullopt when the
// text never nests deeper than `max_depth`.
std::optional<std::size_t> FindExcessNesting(std::string_view text, NestingSyntax syntax,
                                             int max_depth = kMaxNestingDepth);

}  // namespace drover
