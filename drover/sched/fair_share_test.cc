// The queue tree's fair share: decayed usage, weights, the order of queues and users.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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

// --- Fair share ---

TEST(FairShare, QueueWithLessUsageGoesFirst) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a"), Queue("b")}));
  tree.Advance(0, {{"gpu", 10 * kGpu}});
  int a = *tree.FindLeaf("a");
  int b = *tree.FindLeaf("b");
  EXPECT_TRUE(tree.Before(a, b));  // tie: by name
  EXPECT_FALSE(tree.Before(b, a));
  EXPECT_FALSE(tree.Before(a, a));
  MustAdd(tree, Gpus(tree, "a", 2));
  EXPECT_DOUBLE_EQ(tree.Share(a), 0.2);
  EXPECT_DOUBLE_EQ(tree.Share(b), 0.0);
  EXPECT_TRUE(tree.Before(b, a));
  EXPECT_FALSE(tree.Before(a, b));
}

TEST(FairShare, DominantResourceCounts) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a"), Queue("b")}));
  tree.Advance(0, {{"gpu", 10 * kGpu}, {"cpu", 100 * kCore}});
  MustAdd(tree, ChargeOf(tree, "a", {{"gpu", 1 * kGpu}, {"cpu", 50 * kCore}}));
  MustAdd(tree, ChargeOf(tree, "b", {{"gpu", 3 * kGpu}, {"cpu", 1 * kCore}}));
  EXPECT_DOUBLE_EQ(tree.Share(*tree.FindLeaf("a")), 0.5);  // cpu dominates
  EXPECT_DOUBLE_EQ(tree.Share(*tree.FindLeaf("b")), 0.3);
  EXPECT_TRUE(tree.Before(*tree.FindLeaf("b"), *tree.FindLeaf("a")));
}

TEST(FairShare, SharesFollowEveryChangeOfCapacity) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a"), Queue("b")}));
  tree.Advance(0, {{"gpu", 10 * kGpu}});
  MustAdd(tree, Gpus(tree, "a", 5));
  const int a = *tree.FindLeaf("a");
  EXPECT_DOUBLE_EQ(tree.Share(a), 0.5);
  tree.Advance(0, {{"gpu", 20 * kGpu}});  // nodes joined
  EXPECT_DOUBLE_EQ(tree.Share(a), 0.25);
  tree.Advance(0, {{"gpu", 20 * kGpu}});  // the same capacity again
  EXPECT_DOUBLE_EQ(tree.Share(a), 0.25);
  tree.Advance(0, {{"gpu", 20 * kGpu}, {"cpu", 10 * kCore}});
  MustAdd(tree, ChargeOf(tree, "a", {{"cpu", 8 * kCore}}));
  EXPECT_DOUBLE_EQ(tree.Share(a), 0.8);   // cpu now counts, and dominates
  tree.Advance(0, {{"gpu", 10 * kGpu}});  // nodes left: cpu no longer counted
  EXPECT_DOUBLE_EQ(tree.Share(a), 0.5);
}

TEST(FairShare, WeightsScaleShares) {
  model::QueueConfig heavy = Queue("heavy");
  heavy.weight = 2.0;
  QueueTree tree = MustCreate(PolicyOf({heavy, Queue("light")}));
  tree.Advance(0, {{"gpu", 10 * kGpu}});
  MustAdd(tree, Gpus(tree, "heavy", 4));
  MustAdd(tree, Gpus(tree, "light", 3));
  int h = *tree.FindLeaf("heavy");
  int l = *tree.FindLeaf("light");
  EXPECT_DOUBLE_EQ(tree.Share(h), 0.2);  // 0.4 / 2
  EXPECT_DOUBLE_EQ(tree.Share(l), 0.3);
  EXPECT_TRUE(tree.Before(h, l));
}

TEST(FairShare, UsageDecaysByHalfAfterOneHalfLife) {
  model::Policy policy = PolicyOf({Queue("a")});
  policy.fair_share_half_life = kHour;
  QueueTree tree = MustCreate(policy);
  int a = *tree.FindLeaf("a");
  const model::ResourceAmounts capacity = {{"gpu", 10 * kGpu}};
  tree.Advance(0, capacity);
  Charge job = Gpus(tree, "a", 5);
  MustAdd(tree, job);
  EXPECT_DOUBLE_EQ(tree.Share(a), 0.5);
  // Held for one half-life: the history term is 0.5 * (1 - 1/2).
  tree.Advance(kHour, capacity);
  EXPECT_NEAR(tree.Share(a), 0.5 + 0.25, 1e-12);
  tree.Remove(job);
  EXPECT_NEAR(tree.Share(a), 0.25, 1e-12);
  tree.Advance(2 * kHour, capacity);
  EXPECT_NEAR(tree.Share(a), 0.125, 1e-12);
  tree.Advance(3 * kHour, capacity);
  EXPECT_NEAR(tree.Share(a), 0.0625, 1e-12);
  // Time going backwards or standing still changes nothing.
  tree.Advance(3 * kHour, capacity);
  tree.Advance(kHour, capacity);
  EXPECT_NEAR(tree.Share(a), 0.0625, 1e-12);
  // Many steps compound to the same decay as one.
  for (int i = 1; i <= 60; ++i) tree.Advance(3 * kHour + i * kHour / 60, capacity);
  EXPECT_NEAR(tree.Share(a), 0.03125, 1e-12);
}

// The tree accrues each record lazily, over the time since its usage last changed; a
// reference here steps every record at every instant instead (the formula of queues.h). Over
// random starts and ends of jobs of two users in two queues, at random times, the shares agree.
TEST(FairShare, LazyAccrualEqualsAccruingEveryRecordAtEveryInstant) {
  model::Policy policy = PolicyOf({Queue("a"), Queue("b")});
  policy.fair_share_half_life = kHour;
  QueueTree tree = MustCreate(policy);
  const std::int64_t capacity_gpus = 16;
  const model::ResourceAmounts capacity = {{"gpu", capacity_gpus * kGpu}};
  const double horizon = static_cast<double>(kHour) / std::log(2.0);
  struct Reference {
    std::int64_t usage = 0;  // milli-GPUs
    double history = 0.0;
    double Share() const {
      const double cap = static_cast<double>(capacity_gpus * kGpu);
      return static_cast<double>(usage) / cap +
             history / (cap * static_cast<double>(kHour) / std::log(2.0));
    }
  };
  // Keys: "a", "b" (queues), "a:alice", "a:bob", "b:alice", "b:bob" (users of a leaf).
  std::map<std::string, Reference> reference;
  struct Running {
    Charge charge;
    std::string queue, user;
    std::int64_t milli = 0;
  };
  std::vector<Running> running;
  std::mt19937_64 rng(7);
  TimeMs now = 0;
  tree.Advance(now, capacity);
  for (int step = 0; step < 400; ++step) {
    // Every instant, the reference steps every record.
    const TimeMs dt = std::uniform_int_distribution<TimeMs>(0, kHour / 4)(rng);
    now += dt;
    const double keep = std::exp2(-static_cast<double>(dt) / static_cast<double>(kHour));
    for (auto& [key, record] : reference) {
      record.history =
          record.history * keep + static_cast<double>(record.usage) * horizon * (1.0 - keep);
    }
    tree.Advance(now, capacity);
    const bool start = running.empty() || (running.size() < 6 && rng() % 2 == 0);
    if (start) {
      const std::string queue = rng() % 2 == 0 ? "a" : "b";
      const std::string user = rng() % 3 == 0 ? "bob" : "alice";
      const std::int64_t gpus = std::uniform_int_distribution<std::int64_t>(1, 2)(rng);
      running.push_back(Running{Gpus(tree, queue, gpus, user), queue, user, gpus * kGpu});
      MustAdd(tree, running.back().charge);
      reference[queue].usage += gpus * kGpu;
      reference[queue + ":" + user].usage += gpus * kGpu;
    } else {
      const std::size_t i = rng() % running.size();
      tree.Remove(running[i].charge);
      reference[running[i].queue].usage -= running[i].milli;
      reference[running[i].queue + ":" + running[i].user].usage -= running[i].milli;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
    for (const std::string queue : {"a", "b"}) {
      const int leaf = *tree.FindLeaf(queue);
      const double want = reference[queue].Share();
      ASSERT_NEAR(tree.Share(leaf), want, 1e-9 * std::max(1.0, want)) << "step " << step;
      for (const std::string user : {"alice", "bob"}) {
        const double user_want = reference[queue + ":" + user].Share();
        ASSERT_NEAR(tree.UserShare(leaf, user), user_want, 1e-9 * std::max(1.0, user_want))
            << "step " << step << " " << queue << ":" << user;
      }
    }
  }
}

TEST(FairShare, ConstantUsageHistoryConvergesToCurrentShare) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a")}));  // default half-life: 1h
  const model::ResourceAmounts capacity = {{"gpu", 10 * kGpu}};
  tree.Advance(0, capacity);
  MustAdd(tree, Gpus(tree, "a", 5));
  tree.Advance(100 * kHour, capacity);
  EXPECT_NEAR(tree.Share(*tree.FindLeaf("a")), 1.0, 1e-9);
}

TEST(FairShare, ZeroHalfLifeRanksByCurrentUsageOnly) {
  model::Policy policy = PolicyOf({Queue("a"), Queue("b")});
  policy.fair_share_half_life = 0;
  QueueTree tree = MustCreate(policy);
  const model::ResourceAmounts capacity = {{"gpu", 10 * kGpu}};
  tree.Advance(0, capacity);
  Charge job = Gpus(tree, "a", 5);
  MustAdd(tree, job);
  tree.Advance(kHour, capacity);
  tree.Remove(job);
  EXPECT_DOUBLE_EQ(tree.Share(*tree.FindLeaf("a")), 0.0);
}

TEST(FairShare, HistoryRanksAQueueThatUsedMoreRecentlyLater) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a"), Queue("b")}));
  const model::ResourceAmounts capacity = {{"gpu", 10 * kGpu}};
  tree.Advance(0, capacity);
  Charge job = Gpus(tree, "a", 8);
  MustAdd(tree, job);
  tree.Advance(kHour, capacity);
  tree.Remove(job);
  MustAdd(tree, Gpus(tree, "b", 1));
  // a holds nothing now but used 8 GPUs for an hour: 0.8 * 0.5 = 0.4 > 0.1.
  EXPECT_TRUE(tree.Before(*tree.FindLeaf("b"), *tree.FindLeaf("a")));
}

// The worked example of docs/scheduling.md.
TEST(FairShare, WorkedExampleOfTheDocs) {
  model::QueueConfig research = Queue("research");
  research.weight = 2;
  model::Policy policy = PolicyOf({research, Queue("prod")});
  policy.fair_share_half_life = kHour;
  QueueTree tree = MustCreate(policy);
  const int r = *tree.FindLeaf("research");
  const int p = *tree.FindLeaf("prod");
  const model::ResourceAmounts capacity = {{"gpu", 16 * kGpu}};
  const TimeMs nine = 9 * kHour;
  tree.Advance(nine, capacity);
  Charge research_jobs = Gpus(tree, "research", 8);
  MustAdd(tree, research_jobs);
  MustAdd(tree, Gpus(tree, "prod", 2));
  EXPECT_NEAR(tree.Share(r), 0.25, 1e-12);
  EXPECT_NEAR(tree.Share(p), 0.125, 1e-12);
  tree.Advance(nine + kHour, capacity);
  EXPECT_NEAR(tree.Share(r), 0.375, 1e-12);
  EXPECT_NEAR(tree.Share(p), 0.1875, 1e-12);
  EXPECT_TRUE(tree.Before(p, r));
  tree.Remove(research_jobs);
  EXPECT_NEAR(tree.Share(r), 0.125, 1e-12);
  EXPECT_TRUE(tree.Before(r, p));
  tree.Advance(nine + 2 * kHour, capacity);
  EXPECT_NEAR(tree.Share(r), 0.0625, 1e-12);
  EXPECT_NEAR(tree.Share(p), 0.21875, 1e-12);
}

TEST(FairShare, UsersWithinALeafAreOrderedByTheirOwnShare) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a")}));
  int a = *tree.FindLeaf("a");
  tree.Advance(0, {{"gpu", 10 * kGpu}});
  MustAdd(tree, Gpus(tree, "a", 3, "alice"));
  MustAdd(tree, Gpus(tree, "a", 1, "bob"));
  EXPECT_DOUBLE_EQ(tree.UserShare(a, "alice"), 0.3);
  EXPECT_DOUBLE_EQ(tree.UserShare(a, "bob"), 0.1);
  EXPECT_DOUBLE_EQ(tree.UserShare(a, "carol"), 0.0);
  EXPECT_LT(tree.UserShare(a, "bob"), tree.UserShare(a, "alice"));
  EXPECT_DOUBLE_EQ(tree.Share(a), 0.4);
}

TEST(FairShare, BeforeComparesAtTheLevelWherePathsPart) {
  QueueTree tree = MustCreate(PolicyOf({
      Queue("org-a", {}, {Queue("busy"), Queue("idle")}),
      Queue("org-b", {}, {Queue("mid")}),
  }));
  tree.Advance(0, {{"gpu", 10 * kGpu}});
  MustAdd(tree, Gpus(tree, "busy", 6));
  MustAdd(tree, Gpus(tree, "mid", 2));
  int busy = *tree.FindLeaf("busy");
  int idle = *tree.FindLeaf("idle");
  int mid = *tree.FindLeaf("mid");
  // idle uses nothing, but its org uses more than org-b.
  EXPECT_TRUE(tree.Before(mid, idle));
  EXPECT_TRUE(tree.Before(mid, busy));
  // Within org-a the idle team goes first.
  EXPECT_TRUE(tree.Before(idle, busy));
  std::vector<int> leaves = {busy, idle, mid};
  std::sort(leaves.begin(), leaves.end(), [&](int x, int y) { return tree.Before(x, y); });
  EXPECT_THAT(leaves, ElementsAre(mid, idle, busy));
}

TEST(FairShare, SharesAreZeroBeforeTheFirstAdvance) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a"), Queue("b")}));
  MustAdd(tree, Gpus(tree, "b", 2));
  EXPECT_DOUBLE_EQ(tree.Share(*tree.FindLeaf("b")), 0.0);
  EXPECT_TRUE(tree.Before(*tree.FindLeaf("a"), *tree.FindLeaf("b")));  // by name
}

// --- History across trees (policy reloads, restarts) ---

// A tree of org/{a, b} whose leaves ran 4 and 2 GPUs (users alice and bob in a) for one
// half-life, advanced to kHour.
QueueTree TreeWithHistory() {
  model::Policy policy = PolicyOf({Queue("org", {}, {Queue("a"), Queue("b")})});
  policy.fair_share_half_life = kHour;
  QueueTree tree = MustCreate(policy);
  tree.Advance(0, {{"gpu", 8 * kGpu}});
  const Charge alice = Gpus(tree, "a", 3, "alice");
  const Charge bob = Gpus(tree, "a", 1, "bob");
  const Charge b = Gpus(tree, "b", 2);
  for (const Charge& charge : {alice, bob, b}) MustAdd(tree, charge);
  tree.Advance(kHour, {{"gpu", 8 * kGpu}});
  for (const Charge& charge : {alice, bob, b}) tree.Remove(charge);
  return tree;
}

TEST(FairShareHistory, ExportsEveryQueueAndEveryUserOfALeafByPath) {
  const model::FairShareHistory history = TreeWithHistory().History();
  EXPECT_EQ(history.advanced_at, kHour);
  std::vector<std::string> keys;
  for (const auto& entry : history.entries) keys.push_back(entry.queue + ":" + entry.user);
  EXPECT_THAT(keys,
              ElementsAre("org:", "org/a:", "org/a:alice", "org/a:bob", "org/b:", "org/b:alice"));
  // 4 GPUs for one half-life: 4000 * (half_life / ln 2) * (1 - 1/2).
  EXPECT_NEAR(history.entries[1].usage.at("gpu"), 4000.0 * kHour / std::log(2.0) / 2, 1e-3);
}

TEST(FairShareHistory, ANewTreeTakesEachQueuesAndUsersHistoryByPath) {
  const QueueTree old = TreeWithHistory();
  // Another policy: a new queue c, b's weight changed, the same paths otherwise.
  model::QueueConfig b = Queue("b");
  b.weight = 2.0;
  model::Policy policy = PolicyOf({Queue("org", {}, {Queue("c"), Queue("a"), b})});
  policy.fair_share_half_life = kHour;
  QueueTree tree = MustCreate(policy);
  EXPECT_THAT(tree.RestoreHistory(old.History()), ElementsAre());
  tree.Advance(kHour, {{"gpu", 8 * kGpu}});  // no time passes: only the capacity is set
  for (std::string leaf : {"a", "b"}) {
    const int before = *old.FindLeaf(leaf);
    const int after = *tree.FindLeaf(leaf);
    EXPECT_GT(old.Share(before), 0.0) << leaf;
    EXPECT_NEAR(tree.Share(after), old.Share(before) / (leaf == "b" ? 2.0 : 1.0), 1e-12) << leaf;
    EXPECT_NEAR(tree.UserShare(after, "alice"), old.UserShare(before, "alice"), 1e-12) << leaf;
  }
  EXPECT_NEAR(tree.UserShare(*tree.FindLeaf("a"), "bob"), old.UserShare(*old.FindLeaf("a"), "bob"),
              1e-12);
  EXPECT_DOUBLE_EQ(tree.Share(*tree.FindLeaf("c")), 0.0);  // a new queue starts at 0
  EXPECT_EQ(tree.History(), old.History());
}

TEST(FairShareHistory, AQueueTheNewTreeLacksIsDroppedAndReported) {
  const QueueTree old = TreeWithHistory();
  // b is gone; a moved from org to top level, so its path changed too.
  model::Policy policy = PolicyOf({Queue("org", {}, {Queue("x")}), Queue("a")});
  policy.fair_share_half_life = kHour;
  QueueTree tree = MustCreate(policy);
  EXPECT_THAT(tree.RestoreHistory(old.History()), ElementsAre("org/a", "org/b"));
  tree.Advance(kHour, {{"gpu", 8 * kGpu}});
  EXPECT_DOUBLE_EQ(tree.Share(*tree.FindLeaf("a")), 0.0);
  EXPECT_DOUBLE_EQ(tree.UserShare(*tree.FindLeaf("a"), "alice"), 0.0);
  const std::vector<QueueStatus> rows = tree.Status();
  ASSERT_EQ(rows[0].path, "org");
  EXPECT_GT(rows[0].share, 0.0);  // org kept its own
}

TEST(FairShareHistory, RestoredHistoryDecaysFromItsOwnTime) {
  const QueueTree old = TreeWithHistory();
  model::Policy policy = PolicyOf({Queue("org", {}, {Queue("a"), Queue("b")})});
  policy.fair_share_half_life = kHour;
  QueueTree tree = MustCreate(policy);
  tree.RestoreHistory(old.History());
  tree.Advance(2 * kHour, {{"gpu", 8 * kGpu}});  // one half-life later, nothing running
  const int a = *tree.FindLeaf("a");
  EXPECT_NEAR(tree.Share(a), old.Share(*old.FindLeaf("a")) / 2, 1e-12);
}

TEST(FairShareHistory, IgnoresAmountsThatAreNotFiniteAndPositive) {
  QueueTree tree = MustCreate(PolicyOf({Queue("a")}));
  model::FairShareHistory history;
  history.advanced_at = 0;
  history.entries.push_back(
      {"a", "", {{"gpu", -5.0}, {"cpu", std::numeric_limits<double>::infinity()}}});
  history.entries.push_back({"a", "eve", {{"gpu", std::numeric_limits<double>::quiet_NaN()}}});
  EXPECT_THAT(tree.RestoreHistory(history), ElementsAre());
  EXPECT_THAT(tree.History().entries, ElementsAre());
}

}  // namespace
}  // namespace drover::sched
