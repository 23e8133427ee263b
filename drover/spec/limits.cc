#include "drover/spec/limits.h"

#include <fmt/format.h>

#include <algorithm>

namespace drover::spec {

bool IsValidPrincipal(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '@';
  });
}

std::string InvalidPrincipalMessage(std::string_view what, std::string_view name) {
  return fmt::format(
      "invalid {} '{}': use 1 to 64 letters, digits, '.', '_', '-' or '@' (no spaces, control "
      "characters or '/')",
      what, EscapeForMessage(name));
}

bool IsValidSecretName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string InvalidSecretNameMessage(std::string_view name) {
  return fmt::format(
      "invalid secret name '{}': use 1 to 64 letters, digits, '.', '_' or '-', not starting with "
      "'.'",
      EscapeForMessage(name));
}

std::string UnknownTimeZoneMessage(std::string_view name) {
  return fmt::format("unknown time zone \"{}\" (an IANA name such as Europe/Berlin or UTC)",
                     EscapeForMessage(name));
}

std::string EscapeForMessage(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7F) {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out;
}

}  // namespace drover::spec
