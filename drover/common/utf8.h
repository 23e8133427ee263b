#pragma once

// UTF-8 validity (RFC 3629): for the spec parser, which refuses invalid text instead of letting
// it be rewritten to U+FFFD, and for the CLI, which escapes what it cannot print as text.
// Pure functions; thread-safe.

#include <cstddef>
#include <optional>
#include <string_view>

namespace drover {

// The length (1 to 4) of the well-formed UTF-8 sequence starting at text[i], or 0 when the bytes
// there are not one: a stray continuation byte, a truncated sequence, an overlong encoding, a
// surrogate (U+D800..U+DFFF) or a code point above U+10FFFF. Requires i < text.size().
std::size_t Utf8SequenceLength(std::string_view text, std::size_t i);

// The offset of the first byte of `text` that is not part of well-formed UTF-8, or nullopt.
std::optional<std::size_t> FindInvalidUtf8(std::string_view text);

}  // namespace drover
