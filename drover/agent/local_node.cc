#include "drover/agent/local_node.h"

#include <unistd.h>

#include <cstdint>
#include <utility>

namespace drover::agent {

model::Node LocalNode(std::string name, std::vector<model::Gpu> gpus) {
  model::Node node;
  node.name = NodeId(std::move(name));
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  node.cpu_millis = cpus > 0 ? static_cast<std::int64_t>(cpus) * 1000 : 0;
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  node.memory_bytes = pages > 0 && page_size > 0 ? static_cast<std::int64_t>(pages) * page_size : 0;
  node.gpus = std::move(gpus);
  node.address = "127.0.0.1";
  return node;
}

}  // namespace drover::agent
