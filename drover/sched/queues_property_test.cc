// A property of the queue tree: quota invariants hold after any sequence of admitted adds and
// removes, checked against an independent computation from the policy.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "drover/sched/queues.h"
#include "drover/sched/queues_test_util.h"

namespace drover::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// --- Property: the quota invariants hold after any sequence of admitted adds and removes ---

struct RandomTree {
  model::Policy policy;
  std::map<std::string, const model::QueueConfig*> by_path;
};

const std::vector<std::string>& Resources() {
  static const std::vector<std::string> kResources = {"cpu", "gpu", "gpu:h100"};
  return kResources;
}

// N as queues.h defines it: what the queue sets, else 0 for a leaf and the children's sum.
std::int64_t EffectiveNominal(const model::QueueConfig& q, const std::string& r) {
  if (auto it = q.nominal.find(r); it != q.nominal.end()) return it->second;
  std::int64_t sum = 0;
  for (const model::QueueConfig& child : q.children) sum += EffectiveNominal(child, r);
  return sum;
}

model::QueueConfig RandomQueue(std::mt19937_64& rng, const std::string& name, int depth) {
  std::uniform_int_distribution<int> coin(0, 99);
  std::uniform_int_distribution<std::int64_t> units(0, 8);
  model::QueueConfig q;
  q.name = name;
  if (depth < 3) {
    int children = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int i = 0; i < children; ++i) {
      q.children.push_back(RandomQueue(rng, name + "-" + std::to_string(i), depth + 1));
    }
  }
  for (const std::string& r : Resources()) {
    const std::int64_t unit = r == "cpu" ? kCore : kGpu / 2;
    if (coin(rng) < 55) q.nominal[r] = units(rng) * unit;
    const std::int64_t nominal = EffectiveNominal(q, r);
    if (coin(rng) < 30) {
      q.lending_limit[r] =
          std::uniform_int_distribution<std::int64_t>(0, nominal / unit)(rng) * unit;
    }
    if (coin(rng) < 35) q.borrowing_limit[r] = units(rng) * unit;
  }
  return q;
}

void Index(const model::QueueConfig& q, const std::string& prefix, RandomTree& tree) {
  std::string path = prefix.empty() ? q.name : prefix + "/" + q.name;
  tree.by_path[path] = &q;
  for (const model::QueueConfig& child : q.children) Index(child, path, tree);
}

// Drops borrowing and lending limits of resources no queue sets a nominal of (Create rejects
// them).
void DropUngovernedBorrowing(model::QueueConfig& q, const std::set<std::string>& governed) {
  std::erase_if(q.borrowing_limit, [&](const auto& kv) { return !governed.contains(kv.first); });
  std::erase_if(q.lending_limit, [&](const auto& kv) { return !governed.contains(kv.first); });
  for (model::QueueConfig& child : q.children) DropUngovernedBorrowing(child, governed);
}
void CollectNominal(const model::QueueConfig& q, std::set<std::string>& governed) {
  for (const auto& [r, v] : q.nominal) governed.insert(r);
  for (const model::QueueConfig& child : q.children) CollectNominal(child, governed);
}

// Checks the documented invariants against an independent computation from the policy and the
// running charges; returns the first violation found, or "".
std::string Violation(const QueueTree& tree, const RandomTree& random,
                      const std::vector<std::pair<std::string, FlatAmounts>>& running) {
  std::set<std::string> governed;
  for (const model::QueueConfig& q : random.policy.queues) CollectNominal(q, governed);
  // Expected usage per path: each charge counts in its leaf and every ancestor.
  std::map<std::string, model::ResourceAmounts> usage;
  for (const auto& [leaf_path, amounts] : running) {
    std::string path = leaf_path;
    while (true) {
      for (const auto& [r, v] : amounts) usage[path][r] += v;
      std::size_t slash = path.rfind('/');
      if (slash == std::string::npos) break;
      path = path.substr(0, slash);
    }
  }
  auto get = [](const model::ResourceAmounts& m, const std::string& r) -> std::int64_t {
    auto it = m.find(r);
    return it == m.end() ? 0 : it->second;
  };
  std::vector<QueueStatus> rows = tree.Status();
  // Cohorts: members grouped by parent path ("" for the configured roots).
  std::map<std::string, std::vector<std::string>> cohorts;
  for (const QueueStatus& row : rows) {
    for (const std::string& r : Resources()) {
      if (get(row.usage, r) != get(usage[row.path], r)) {
        return "usage of " + row.path + " " + r + " is " + std::to_string(get(row.usage, r));
      }
    }
    std::size_t slash = row.path.rfind('/');
    cohorts[slash == std::string::npos ? "" : row.path.substr(0, slash)].push_back(row.path);
  }
  for (const std::string& r : governed) {
    for (const auto& [parent, members] : cohorts) {
      std::int64_t drawn = 0, pool = 0, borrowed = 0, lent = 0;
      for (const std::string& m : members) {
        const model::QueueConfig& q = *random.by_path.at(m);
        const std::int64_t n = EffectiveNominal(q, r);
        const std::int64_t l = q.lending_limit.contains(r) ? q.lending_limit.at(r) : n;
        const std::int64_t u = get(usage[m], r);
        if (q.borrowing_limit.contains(r) && u > n + q.borrowing_limit.at(r)) {
          return m + " uses " + std::to_string(u) + " " + r + " above nominal + borrowing limit";
        }
        drawn += std::max<std::int64_t>(0, u - (n - l));
        pool += l;
        borrowed += std::max<std::int64_t>(0, u - n);
        const std::int64_t unused = std::min(l, std::max<std::int64_t>(0, n - u));
        const std::int64_t lent_m = get(Row(rows, m).lent, r);
        if (lent_m > unused) return m + " lends more than its unused lendable " + r;
        lent += lent_m;
      }
      if (drawn > pool) {
        return "cohort under '" + parent + "' draws " + std::to_string(drawn) + " " + r +
               " from a pool of " + std::to_string(pool);
      }
      if (lent != borrowed) return "cohort under '" + parent + "' lent != borrowed for " + r;
    }
  }
  return "";
}

TEST(QuotaProperty, AdmittedChargesNeverBreakQuotaInvariants) {
  std::mt19937_64 rng(20240611);
  int admitted = 0;
  int rejected = 0;
  for (int trial = 0; trial < 300; ++trial) {
    RandomTree random;
    int roots = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int i = 0; i < roots; ++i) {
      random.policy.queues.push_back(RandomQueue(rng, "q" + std::to_string(i), 1));
    }
    std::set<std::string> governed;
    for (const model::QueueConfig& q : random.policy.queues) CollectNominal(q, governed);
    for (model::QueueConfig& q : random.policy.queues) DropUngovernedBorrowing(q, governed);
    for (const model::QueueConfig& q : random.policy.queues) Index(q, "", random);
    Result<QueueTree> created = QueueTree::Create(random.policy);
    ASSERT_TRUE(created.has_value()) << created.error().ToString();
    QueueTree tree = *created;
    std::vector<std::string> leaves = tree.LeafNames();

    std::vector<Charge> charges;
    std::vector<std::pair<std::string, FlatAmounts>> running;
    for (int step = 0; step < 80; ++step) {
      if (!charges.empty() && std::uniform_int_distribution<int>(0, 99)(rng) < 35) {
        std::size_t i = std::uniform_int_distribution<std::size_t>(0, charges.size() - 1)(rng);
        tree.Remove(charges[i]);
        charges.erase(charges.begin() + static_cast<std::ptrdiff_t>(i));
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        const std::string& leaf =
            leaves[std::uniform_int_distribution<std::size_t>(0, leaves.size() - 1)(rng)];
        FlatAmounts amounts;
        std::int64_t gpus = std::uniform_int_distribution<std::int64_t>(0, 6)(rng) * kGpu / 2;
        if (gpus > 0) {
          amounts["gpu"] = gpus;
          if (std::uniform_int_distribution<int>(0, 1)(rng)) amounts["gpu:h100"] = gpus;
        }
        std::int64_t cpu = std::uniform_int_distribution<std::int64_t>(0, 4)(rng) * kCore;
        if (cpu > 0) amounts["cpu"] = cpu;
        Charge charge = ChargeOf(tree, leaf, amounts);
        AdmitVerdict verdict = tree.CheckAdmit(charge);
        // CheckAdmit is exact: it admits iff adding keeps the invariants.
        QueueTree copy = tree;
        copy.Add(charge);
        auto with = running;
        with.emplace_back(tree.Path(charge.leaf), amounts);
        std::string after = Violation(copy, random, with);
        if (verdict.ok()) {
          ASSERT_EQ(after, "") << "trial " << trial << " step " << step;
          tree = std::move(copy);
          charges.push_back(charge);
          running = std::move(with);
          ++admitted;
        } else {
          ASSERT_NE(after, "") << "trial " << trial << " step " << step << ": " << verdict.Render();
          ASSERT_NE(verdict.code, AdmitVerdict::Code::kLimit);
          ++rejected;
        }
      }
      ASSERT_EQ(Violation(tree, random, running), "") << "trial " << trial << " step " << step;
    }
    // Removing everything returns every node to zero.
    for (const Charge& charge : charges) tree.Remove(charge);
    for (const QueueStatus& row : tree.Status()) {
      for (const auto& [r, v] : row.usage) EXPECT_EQ(v, 0) << row.path << " " << r;
      EXPECT_EQ(row.running_jobs, 0);
    }
  }
  // The trees are tight enough that both outcomes are exercised.
  EXPECT_GT(admitted, 1000);
  EXPECT_GT(rejected, 1000);
}

// --- Property: the spec form of CheckAdmit gives the verdict of the Charge form ---

TEST(QuotaProperty, SpecCheckAdmitEqualsChargeCheckAdmit) {
  std::mt19937_64 rng(20261202);
  std::uniform_int_distribution<int> coin(0, 99);
  int refused = 0;
  for (int trial = 0; trial < 200; ++trial) {
    model::Policy policy;
    const int roots = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int i = 0; i < roots; ++i) {
      policy.queues.push_back(RandomQueue(rng, "q" + std::to_string(i), 1));
    }
    std::set<std::string> governed;
    for (const model::QueueConfig& q : policy.queues) CollectNominal(q, governed);
    for (model::QueueConfig& q : policy.queues) DropUngovernedBorrowing(q, governed);
    if (coin(rng) < 50) policy.queues.front().user_limits.max_resources["gpu"] = 2 * kGpu;
    Result<QueueTree> created = QueueTree::Create(policy);
    ASSERT_TRUE(created.has_value()) << created.error().ToString();
    QueueTree tree = *created;
    const std::vector<std::string> leaves = tree.LeafNames();
    for (int step = 0; step < 60; ++step) {
      const int leaf = *tree.FindLeaf(
          leaves[std::uniform_int_distribution<std::size_t>(0, leaves.size() - 1)(rng)]);
      model::JobSpec spec;
      spec.owner = coin(rng) < 50 ? "alice" : "bob";
      spec.workers = std::uniform_int_distribution<int>(0, 3)(rng);
      spec.requirements.per_worker.cpu_millis =
          std::uniform_int_distribution<std::int64_t>(0, 2)(rng) * kCore;
      spec.requirements.per_worker.memory_bytes = coin(rng) < 50 ? 0 : 1 << 30;
      switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
        case 0:
          spec.requirements.per_worker.gpus = std::uniform_int_distribution<int>(1, 3)(rng);
          break;
        case 1:
          spec.requirements.gpu_share_millis = 500;
          break;
        case 2:
          spec.requirements.mig_profile = "3g.40gb";
          break;
        default:
          break;
      }
      const std::string flavor = coin(rng) < 50 ? "" : (coin(rng) < 50 ? "H100" : "a100");
      const Charge charge{leaf, spec.owner, spec.pipeline, ChargeAmounts(spec, flavor)};
      const AdmitVerdict by_charge = tree.CheckAdmit(charge);
      ASSERT_EQ(tree.CheckAdmit(leaf, spec, flavor), by_charge)
          << "trial " << trial << " step " << step << ": " << by_charge.Render();
      if (by_charge.ok()) {
        tree.Add(charge);
      } else {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 500);
}

}  // namespace
}  // namespace drover::sched
