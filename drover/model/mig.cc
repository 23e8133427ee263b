#include "drover/model/mig.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <set>
#include <string>

namespace drover::model {
namespace {

// The leading decimal digits of `text` from `*i`, advancing `*i`.
std::string_view Digits(std::string_view text, std::size_t* i) {
  const std::size_t start = *i;
  while (*i < text.size() && std::isdigit(static_cast<unsigned char>(text[*i]))) ++*i;
  return text.substr(start, *i - start);
}

}  // namespace

Result<MigProfile> ParseMigProfile(std::string_view name) {
  std::size_t i = 0;
  const std::string_view slices = Digits(name, &i);
  const bool g = i < name.size() && name[i] == 'g';
  if (g) ++i;
  const bool dot = g && i < name.size() && name[i] == '.';
  if (dot) ++i;
  const std::string_view memory = dot ? Digits(name, &i) : std::string_view();
  MigProfile profile;
  if (slices.empty() || !dot || memory.empty() || name.substr(i) != "gb" ||
      std::from_chars(memory.data(), memory.data() + memory.size(), profile.memory_gb).ec !=
          std::errc()) {
    return InvalidArgument(fmt::format(
        "'{}' is not a MIG profile: write <compute slices>g.<memory>gb, e.g. 1g.10gb or 3g.40gb",
        name));
  }
  if (slices.size() != 1 || slices[0] < '1' || slices[0] > '7') {
    return InvalidArgument(fmt::format("MIG profile '{}': the compute slices ({}g) must be 1 to {}",
                                       name, slices, kMigComputeSlices));
  }
  if (profile.memory_gb == 0) {
    return InvalidArgument(fmt::format("MIG profile '{}': the memory must not be 0", name));
  }
  profile.compute_slices = slices[0] - '0';
  return profile;
}

Status CheckMigLayout(const std::vector<MigSlots>& layout) {
  if (layout.empty()) {
    return InvalidArgument("the MIG layout is empty; list the instances, e.g. {3g.40gb: 2}");
  }
  std::set<std::string> seen;
  int slices = 0;
  for (const MigSlots& slot : layout) {
    DROVER_ASSIGN_OR_RETURN(auto profile, ParseMigProfile(slot.profile));
    if (!seen.insert(slot.profile).second) {
      return InvalidArgument(fmt::format("MIG profile '{}' is listed twice", slot.profile));
    }
    if (slot.count < 1 || slot.count > kMigComputeSlices) {
      return InvalidArgument(fmt::format("MIG profile '{}': the count must be 1 to {}, found {}",
                                         slot.profile, kMigComputeSlices, slot.count));
    }
    slices += profile.compute_slices * slot.count;
  }
  if (slices > kMigComputeSlices) {
    return InvalidArgument(fmt::format("the MIG layout uses {} compute slices; a GPU has {}",
                                       slices, kMigComputeSlices));
  }
  return OkStatus();
}

namespace {

// NVIDIA MIG user guide, "Supported MIG Profiles": A100-SXM4-40GB; A100-SXM4-80GB (the names
// "change according to the memory proportion"); H100-SXM5-80GB; H100 94GB (H100 NVL); H200
// 141GB. The counts are the tables' "Number of Instances Available".
constexpr MigProfileSpec kA100_40[] = {{"1g.5gb", 1, 7},  {"1g.10gb", 1, 4}, {"2g.10gb", 2, 3},
                                       {"3g.20gb", 3, 2}, {"4g.20gb", 4, 1}, {"7g.40gb", 7, 1}};
constexpr MigProfileSpec kA100_80[] = {{"1g.10gb", 1, 7}, {"1g.20gb", 1, 4}, {"2g.20gb", 2, 3},
                                       {"3g.40gb", 3, 2}, {"4g.40gb", 4, 1}, {"7g.80gb", 7, 1}};
constexpr MigProfileSpec kH100_94[] = {{"1g.12gb", 1, 7}, {"1g.24gb", 1, 4}, {"2g.24gb", 2, 3},
                                       {"3g.47gb", 3, 2}, {"4g.47gb", 4, 1}, {"7g.94gb", 7, 1}};
constexpr MigProfileSpec kH200[] = {{"1g.18gb", 1, 7}, {"1g.35gb", 1, 4}, {"2g.35gb", 2, 3},
                                    {"3g.71gb", 3, 2}, {"4g.71gb", 4, 1}, {"7g.141gb", 7, 1}};

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

}  // namespace

std::span<const MigProfileSpec> MigProfilesOf(std::string_view model, std::int64_t memory_bytes) {
  // The boundaries sit between the products' memory sizes (as NVML reports them, a little under
  // the marketed figure): 40 | 80, 80 | 94.
  if (model == "A100") {
    return memory_bytes > 60 * kGiB ? std::span<const MigProfileSpec>(kA100_80)
                                    : std::span<const MigProfileSpec>(kA100_40);
  }
  if (model == "H100") {
    return memory_bytes > 85 * kGiB ? std::span<const MigProfileSpec>(kH100_94)
                                    : std::span<const MigProfileSpec>(kA100_80);  // same names
  }
  if (model == "H200") return kH200;
  return {};
}

}  // namespace drover::model
