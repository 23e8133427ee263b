#include "drover/model/cron.h"

namespace drover::model {

std::string_view ConcurrencyPolicyName(ConcurrencyPolicy policy) {
  return kConcurrencyPolicyNames.Name(policy);
}

std::optional<ConcurrencyPolicy> ParseConcurrencyPolicy(std::string_view name) {
  return kConcurrencyPolicyNames.Parse(name);
}

}  // namespace drover::model
