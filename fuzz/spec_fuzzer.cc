// libFuzzer harness: arbitrary bytes as a workload spec file (YAML or JSON) through
// spec::ParseDocumentsWithDiagnostics, the parser behind `drover submit` and POST /v1/jobs.
// The parser promises never to throw and to hand out jobs only without diagnostics; a crash,
// a sanitizer report, a leak or a broken promise is a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "drover/spec/parse.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  drover::spec::ParseOptions options;
  options.file_name = "fuzz.yaml";
  options.base_dir = "/work/base";
  const drover::spec::ParseOutput out = drover::spec::ParseDocumentsWithDiagnostics(
      std::string_view(reinterpret_cast<const char*>(data), size), options);
  FUZZ_CHECK(out.diagnostics.empty() || (out.jobs.empty() && out.crons.empty()));
  return 0;
}
