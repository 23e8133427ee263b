// libFuzzer harness: arbitrary bytes as a node file through spec::ParseNodeFile
// (`drover server --nodes`, the simulator's cluster files). Errors are values; a crash, a
// sanitizer report or a leak is a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "drover/spec/node_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)drover::spec::ParseNodeFile(std::string_view(reinterpret_cast<const char*>(data), size),
                                    "nodes.yaml");
  return 0;
}
