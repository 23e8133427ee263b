#include "drover/agent/gpu/gpu_model.h"

#include <cctype>
#include <string>
#include <vector>

#include "drover/common/ascii.h"

namespace drover::agent {
namespace {

std::vector<std::string_view> SplitWords(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

bool IsVendorWord(std::string_view word) {
  for (std::string_view vendor : {"NVIDIA", "Tesla", "GeForce", "Quadro"}) {
    if (EqualsIgnoringCase(word, vendor)) return true;
  }
  return false;
}

std::string_view CutAtDash(std::string_view word) {
  std::size_t dash = word.find('-');
  return dash == std::string_view::npos || dash == 0 ? word : word.substr(0, dash);
}

}  // namespace

std::string NormalizeGpuModel(std::string_view full_name) {
  std::vector<std::string_view> words = SplitWords(full_name);
  std::size_t i = 0;
  while (i < words.size() && IsVendorWord(words[i])) ++i;
  if (i == words.size()) {
    std::string compact;
    for (std::string_view w : words) compact += w;
    return compact;
  }
  std::string_view first = CutAtDash(words[i]);
  bool family = EqualsIgnoringCase(first, "RTX") || EqualsIgnoringCase(first, "GTX") ||
                EqualsIgnoringCase(first, "TITAN");
  if (family && first.size() == words[i].size() && i + 1 < words.size()) {
    return std::string(first) + std::string(CutAtDash(words[i + 1]));
  }
  return std::string(first);
}

}  // namespace drover::agent
