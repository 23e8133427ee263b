#pragma once

// A bound on JSON nesting, checked before parsing so that a hostile body cannot make the parser
// recurse deeply.

#include <cstddef>
#include <optional>
#include <string_view>

namespace drover::gateway {

// The byte offset of the first `[` or `{` that opens a level deeper than `max_depth` (outside
// strings, honouring escapes), or nullopt. Does not validate the JSON otherwise.
std::optional<std::size_t> ExceedsJsonDepth(std::string_view text, int max_depth);

}  // namespace drover::gateway
