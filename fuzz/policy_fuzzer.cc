// libFuzzer harness: arbitrary bytes as a scheduling policy file through
// spec::ParsePolicyWithDiagnostics (`drover server --policy`, POST /v1/policy/reload).
// A policy is handed out exactly when there is no diagnostic.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "drover/spec/policy.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  drover::spec::ParseOptions options;
  options.file_name = "policy.yaml";
  const drover::spec::PolicyParseOutput out = drover::spec::ParsePolicyWithDiagnostics(
      std::string_view(reinterpret_cast<const char*>(data), size), options);
  FUZZ_CHECK(out.policy.has_value() == out.diagnostics.empty());
  return 0;
}
