#include "drover/model/resources.h"

#include <fmt/format.h>

namespace drover::model {

bool Tolerates(const Toleration& toleration, const Taint& taint) {
  if (toleration.effect && *toleration.effect != taint.effect) return false;
  if (toleration.op == Toleration::Operator::kExists) {
    return toleration.key.empty() || toleration.key == taint.key;
  }
  return toleration.key == taint.key && toleration.value == taint.value;
}

std::string_view TaintEffectName(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "NoSchedule";
}

std::string FormatTaint(const Taint& taint) {
  if (taint.value.empty()) return fmt::format("{}:{}", taint.key, TaintEffectName(taint.effect));
  return fmt::format("{}={}:{}", taint.key, taint.value, TaintEffectName(taint.effect));
}

}  // namespace drover::model
