#pragma once

// Builders shared by the queue tree's tests (queues_test.cc, fair_share_test.cc,
// queues_property_test.cc): queues, policies and charges in a line each.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/sched/queues.h"

namespace drover::sched {

inline constexpr std::int64_t kGpu = 1000;      // one whole GPU in milli-GPUs
inline constexpr std::int64_t kCore = 1000;     // one CPU in millicores
inline constexpr std::int64_t kGi = 1LL << 30;  // bytes
inline constexpr DurationMs kHour = kMillisPerHour;

inline model::QueueConfig Queue(std::string name, model::ResourceAmounts nominal = {},
                                std::vector<model::QueueConfig> children = {}) {
  model::QueueConfig q;
  q.name = std::move(name);
  q.nominal = std::move(nominal);
  q.children = std::move(children);
  return q;
}

inline model::Policy PolicyOf(std::vector<model::QueueConfig> queues) {
  model::Policy policy;
  policy.queues = std::move(queues);
  return policy;
}

inline QueueTree MustCreate(const model::Policy& policy) {
  Result<QueueTree> tree = QueueTree::Create(policy);
  EXPECT_TRUE(tree.has_value()) << tree.error().ToString();
  return tree.has_value() ? *tree : QueueTree();
}

inline Charge ChargeOf(const QueueTree& tree, std::string_view leaf, FlatAmounts amounts,
                       std::string user = "alice", std::string pipeline = "") {
  std::optional<int> id = tree.FindLeaf(leaf);
  EXPECT_TRUE(id.has_value()) << leaf;
  return Charge{id.value_or(1), std::move(user), std::move(pipeline), std::move(amounts)};
}

inline Charge Gpus(const QueueTree& tree, std::string_view leaf, std::int64_t gpus,
                   std::string user = "alice") {
  return ChargeOf(tree, leaf, {{"gpu", gpus * kGpu}}, std::move(user));
}

// Adds `charge` after checking that it is admitted.
inline void MustAdd(QueueTree& tree, const Charge& charge) {
  AdmitVerdict verdict = tree.CheckAdmit(charge);
  ASSERT_TRUE(verdict.ok()) << verdict.Render();
  tree.Add(charge);
}

inline const QueueStatus& Row(const std::vector<QueueStatus>& rows, std::string_view path) {
  for (const QueueStatus& row : rows) {
    if (row.path == path) return row;
  }
  ADD_FAILURE() << "no row " << path;
  return rows.front();
}

// --- The tree itself ---

}  // namespace drover::sched
