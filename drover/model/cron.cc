#include "drover/model/cron.h"

namespace drover::model {

std::string_view ConcurrencyPolicyName(ConcurrencyPolicy policy) {
  switch (policy) {
    case ConcurrencyPolicy::kAllow:
      return "allow";
    case ConcurrencyPolicy::kForbid:
      return "forbid";
    case ConcurrencyPolicy::kReplace:
      return "replace";
  }
  return "";
}

std::optional<ConcurrencyPolicy> ParseConcurrencyPolicy(std::string_view name) {
  for (ConcurrencyPolicy policy :
       {ConcurrencyPolicy::kAllow, ConcurrencyPolicy::kForbid, ConcurrencyPolicy::kReplace}) {
    if (ConcurrencyPolicyName(policy) == name) return policy;
  }
  return std::nullopt;
}

}  // namespace drover::model
