#include "drover/model/node.h"

namespace drover::model {

std::string_view GpuSharingName(GpuSharing sharing) {
  switch (sharing) {
    case GpuSharing::kExclusive:
      return "exclusive";
    case GpuSharing::kTimeslice:
      return "timeslice";
    case GpuSharing::kMig:
      return "mig";
  }
  return "exclusive";
}

}  // namespace drover::model
