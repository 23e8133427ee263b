#pragma once

// Text for POSIX shells (batch scripts, container commands).

#include <string>

namespace drover {

// `text` as one shell word: 'text', with every ' written as '\''.
std::string ShellQuote(const std::string& text);

}  // namespace drover
