#include "drover/spec/gpu_declaration.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <string>

#include "drover/common/quantity.h"

namespace drover::spec {
namespace {

constexpr int kMaxGpusPerEntry = 4096;
constexpr std::int64_t kGi = std::int64_t{1} << 30;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

struct Entry {
  int count = 0;
  std::string model;
  std::int64_t memory_bytes = 0;
  model::GpuSharing sharing = model::GpuSharing::kExclusive;
};

Result<Entry> ParseEntry(std::string_view text) {
  std::size_t x = 0;
  while (x < text.size() && std::isdigit(static_cast<unsigned char>(text[x]))) ++x;
  if (x == 0 || x >= text.size() || (text[x] != 'x' && text[x] != 'X')) {
    return InvalidArgument("expected COUNTxMODEL[-MEMORY], e.g. 8xH100-80GB");
  }
  Entry entry;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + x, entry.count);
  if (ec != std::errc() || entry.count < 1 || entry.count > kMaxGpusPerEntry) {
    return InvalidArgument(fmt::format("count must be between 1 and {}", kMaxGpusPerEntry));
  }
  std::string_view rest = text.substr(x + 1);
  if (std::size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    const std::string_view sharing = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    auto parsed = model::ParseGpuSharing(sharing);
    if (parsed == model::GpuSharing::kMig) {
      return InvalidArgument(
          "MIG GPUs need their layout: declare them in a node file (gpus: [{model, count, "
          "sharing: mig, mig: {3g.40gb: 2}}])");
    }
    if (!parsed) {
      return InvalidArgument(fmt::format(
          "unknown sharing mode '{}' after ':' (expected exclusive or timeslice)", sharing));
    }
    entry.sharing = *parsed;
  }
  std::string_view memory;
  if (std::size_t dash = rest.rfind('-'); dash != std::string_view::npos) {
    memory = rest.substr(dash + 1);
    rest = rest.substr(0, dash);
    if (memory.empty()) return InvalidArgument("memory is empty after '-'");
  }
  if (rest.empty()) return InvalidArgument("model is empty");
  for (char c : rest) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') {
      return InvalidArgument(fmt::format("model '{}' has an invalid character '{}'", rest, c));
    }
  }
  entry.model = std::string(rest);
  if (!memory.empty()) {
    auto bytes = ParseGpuMemory(memory);
    if (!bytes) {
      return InvalidArgument(fmt::format("memory '{}': {}", memory, bytes.error().message));
    }
    entry.memory_bytes = *bytes;
  } else if (auto known = DefaultGpuMemoryBytes(entry.model)) {
    entry.memory_bytes = *known;
  } else {
    return InvalidArgument(
        fmt::format("model '{}' has no default memory size; write it, e.g. {}x{}-48GB", entry.model,
                    entry.count, entry.model));
  }
  return entry;
}

}  // namespace

Result<std::vector<model::Gpu>> ParseGpuDeclaration(std::string_view spec) {
  std::vector<model::Gpu> gpus;
  std::string_view trimmed = Trim(spec);
  if (trimmed.empty() || trimmed == "0") return gpus;
  std::size_t pos = 0;
  int entry_number = 0;
  while (pos <= spec.size()) {
    std::size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view raw = spec.substr(pos, comma - pos);
    std::size_t lead = 0;
    while (lead < raw.size() && std::isspace(static_cast<unsigned char>(raw[lead]))) ++lead;
    std::string_view text = Trim(raw);
    ++entry_number;
    std::size_t column = pos + lead + 1;
    if (text.empty()) {
      return InvalidArgument(
          fmt::format("GPU entry {} (column {}): is empty", entry_number, column));
    }
    auto entry = ParseEntry(text);
    if (!entry) {
      return InvalidArgument(fmt::format("GPU entry {} '{}' (column {}): {}", entry_number, text,
                                         column, entry.error().message));
    }
    for (int i = 0; i < entry->count; ++i) {
      model::Gpu gpu;
      gpu.index = static_cast<int>(gpus.size());
      gpu.uuid = fmt::format("GPU-declared-{}", gpu.index);
      gpu.model = entry->model;
      gpu.memory_bytes = entry->memory_bytes;
      gpu.topology_group = fmt::format("g{}", entry_number - 1);
      gpu.sharing = entry->sharing;
      gpus.push_back(std::move(gpu));
    }
    pos = comma + 1;
  }
  return gpus;
}

std::optional<std::int64_t> DefaultGpuMemoryBytes(std::string_view model) {
  if (model == "H100") return 80 * kGi;
  if (model == "H200") return 141 * kGi;
  if (model == "A100") return 80 * kGi;
  if (model == "V100") return 16 * kGi;
  if (model == "L4") return 24 * kGi;
  return std::nullopt;
}

Result<std::int64_t> ParseGpuMemory(std::string_view text) {
  std::string spelled(text);
  while (!spelled.empty() && std::isspace(static_cast<unsigned char>(spelled.back()))) {
    spelled.pop_back();
  }
  for (std::string_view unit : {"GB", "TB", "G", "T"}) {
    if (spelled.size() > unit.size() && spelled.ends_with(unit) &&
        std::isdigit(static_cast<unsigned char>(spelled[spelled.size() - unit.size() - 1]))) {
      spelled.replace(spelled.size() - unit.size(), unit.size(), std::string(1, unit[0]) + "i");
      break;
    }
  }
  DROVER_ASSIGN_OR_RETURN(auto bytes, ParseBytes(spelled));
  if (bytes <= 0) return InvalidArgument("GPU memory must be positive");
  return bytes;
}

}  // namespace drover::spec
