#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/ids.h"
#include "drover/model/names.h"

namespace drover::model {

// What one worker (task) of a job needs, or what a node has free. Integers only.
struct Resources {
  std::int64_t cpu_millis = 0;
  std::int64_t memory_bytes = 0;
  std::int32_t gpus = 0;

  friend bool operator==(const Resources&, const Resources&) = default;
};

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };
// Kubernetes' spellings.
inline constexpr NameTable kTaintEffectNames{std::array{
    NameEntry{TaintEffect::kNoSchedule, "NoSchedule"},
    NameEntry{TaintEffect::kPreferNoSchedule, "PreferNoSchedule"},
    NameEntry{TaintEffect::kNoExecute, "NoExecute"},
}};
static_assert(kTaintEffectNames.size() == static_cast<std::size_t>(TaintEffect::kNoExecute) + 1);

// A node property that repels jobs that do not tolerate it (Kubernetes semantics).
struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;

  friend bool operator==(const Taint&, const Taint&) = default;
};

// A job's permission to run on nodes with a matching taint.
struct Toleration {
  enum class Operator { kEqual, kExists };
  std::string key;  // empty with kExists tolerates every taint
  Operator op = Operator::kEqual;
  std::string value;
  // Unset tolerates every effect of the matching key.
  std::optional<TaintEffect> effect;

  friend bool operator==(const Toleration&, const Toleration&) = default;
};
// Kubernetes' spellings.
inline constexpr NameTable kTolerationOperatorNames{std::array{
    NameEntry{Toleration::Operator::kEqual, "Equal"},
    NameEntry{Toleration::Operator::kExists, "Exists"},
}};
static_assert(kTolerationOperatorNames.size() ==
              static_cast<std::size_t>(Toleration::Operator::kExists) + 1);

// True if `toleration` tolerates `taint`.
bool Tolerates(const Toleration& toleration, const Taint& taint);

// kTaintEffectNames.Name / Parse.
std::string_view TaintEffectName(TaintEffect effect);
std::optional<TaintEffect> ParseTaintEffect(std::string_view name);
// "key=value:Effect" (or "key:Effect" when the value is empty), as kubectl prints taints.
std::string FormatTaint(const Taint& taint);

}  // namespace drover::model
