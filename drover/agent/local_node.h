#pragma once

// The description of the machine Drover itself runs on, as a node.

#include <string>
#include <vector>

#include "drover/model/node.h"

namespace drover::agent {

// This machine as a node: CPUs online (sysconf) in millicores, physical memory, the given GPUs,
// address 127.0.0.1, no labels or taints.
model::Node LocalNode(std::string name, std::vector<model::Gpu> gpus);

}  // namespace drover::agent
