#include "drover/model/node.h"

namespace drover::model {

std::string_view GpuSharingName(GpuSharing sharing) { return kGpuSharingNames.Name(sharing); }

std::optional<GpuSharing> ParseGpuSharing(std::string_view name) {
  return kGpuSharingNames.Parse(name);
}

}  // namespace drover::model
