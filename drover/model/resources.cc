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

std::string_view TaintEffectName(TaintEffect effect) { return kTaintEffectNames.Name(effect); }

std::optional<TaintEffect> ParseTaintEffect(std::string_view name) {
  return kTaintEffectNames.Parse(name);
}

std::string FormatTaint(const Taint& taint) {
  if (taint.value.empty()) return fmt::format("{}:{}", taint.key, TaintEffectName(taint.effect));
  return fmt::format("{}={}:{}", taint.key, taint.value, TaintEffectName(taint.effect));
}

}  // namespace drover::model
