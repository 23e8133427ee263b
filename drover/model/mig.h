#pragma once

// MIG (Multi-Instance GPU) profiles and the layouts nodes declare: which instances a GPU in
// `mig` mode is cut into (model::Gpu::mig).

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/node.h"

namespace drover::model {

// A MIG GPU has 7 compute slices (A100, H100, H200).
constexpr int kMigComputeSlices = 7;

struct MigProfile {
  int compute_slices = 0;  // 1..7: the "3" of "3g.40gb"
  int memory_gb = 0;       // the "40" of "3g.40gb"
};

// Parses a profile name "<g>g.<memory>gb" as nvidia-smi writes it ("1g.10gb", "3g.40gb",
// "7g.141gb"), g from 1 to 7 and memory a positive whole number. Only the syntax is checked:
// which profiles a GPU offers depends on its model. Lower case only (the spec parser lower-cases
// what jobs write). kInvalidArgument saying what is wrong, e.g.
//   "'1g18gb' is not a MIG profile: write <compute slices>g.<memory>gb, e.g. 1g.10gb or 3g.40gb".
Result<MigProfile> ParseMigProfile(std::string_view name);

// Checks the instances one GPU is cut into, loosely: every profile parses, every count is at
// least 1, no profile is listed twice, and the compute slices add up to at most 7. Whether the
// combination fits the GPU's memory and placement rules is left to the operator (nvidia-smi
// enforces them when the instances are created). kInvalidArgument naming the first problem.
Status CheckMigLayout(const std::vector<MigSlots>& layout);

// One GPU instance profile a GPU model offers, as NVIDIA's MIG user guide lists it ("Supported
// MIG Profiles", docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html):
// the name nvidia-smi shows, its compute slices (of 7) and how many instances of it one GPU
// holds at most. The +me (media extension) and +gfx variants are left out: they are the same
// slice with decoders, which Drover does not schedule.
struct MigProfileSpec {
  std::string_view name;
  int compute_slices = 0;
  int max_instances = 0;
};

// The profiles of a GPU of `model` (normalized: "A100", "H100", "H200") with `memory_bytes` of
// memory (the guide's tables differ by memory: A100 40GB or 80GB, H100 80GB or 94GB), smallest
// first; empty for a model the guide does not list or one without MIG.
std::span<const MigProfileSpec> MigProfilesOf(std::string_view model, std::int64_t memory_bytes);

}  // namespace drover::model
