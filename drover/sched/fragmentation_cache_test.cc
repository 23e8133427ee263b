// What fragmentation scoring remembers between plans: a ClusterState's caches per workload mix
// (FragmentationCaches, ClusterState::Impl::fragmentation_caches) give the placements a fresh
// memo gives, across allocations, releases and node changes; and every cache stays bounded.

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "drover/sched/cluster_index.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/fragmentation.h"
#include "drover/sched/placement.h"
#include "drover/sched/sched_test_util.h"

namespace drover::sched {
namespace {

using testing::Fgd;
using testing::kGi;
using testing::MakeCpuJob;
using testing::MakeJob;
using testing::MakeNode;
using testing::MakeSharedNode;
using testing::MakeShareJob;
using testing::MixOfSpecs;

TEST(FragmentationCacheAcrossPlans, PlacesAsAFreshMemoEveryTime) {
  // Two copies of a random cluster take the same jobs and releases. On `kept` every plan uses
  // the cluster's own caches, one per mix, kept from plan to plan (PlanOptions leaves
  // fragmentation_cache null); on `fresh` every plan is lent a new, empty cache. Plans alternate
  // between two mixes (both caches stay in use), jobs end at random, and a node's labels change
  // midway (a new version of its state): the placements agree throughout.
  for (int seed = 0; seed < 100; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    ClusterState kept;
    ClusterState fresh;
    std::vector<model::Node> nodes;
    const int count = 8 + static_cast<int>(rng() % 12);
    for (int i = 0; i < count; ++i) {
      const std::string name = "n" + std::to_string(i);
      const int gpus = 2 << (rng() % 3);
      const std::int64_t cpu = rng() % 2 == 0 ? 32'000 : 64'000;
      nodes.push_back(rng() % 4 == 0 ? MakeSharedNode(name, gpus, model::GpuSharing::kTimeslice, {},
                                                      "H100", cpu, 256 * kGi)
                                     : MakeNode(name, gpus, "H100", cpu, 256 * kGi));
    }
    for (const model::Node& node : nodes) {
      kept.UpsertNode(node);
      fresh.UpsertNode(node);
    }
    std::vector<model::JobSpec> specs;
    for (int gpus : {1, 2, 4}) {
      model::JobSpec spec = MakeJob(gpus);
      spec.requirements.per_worker.cpu_millis = 2'000 * (1 + static_cast<int>(rng() % 6));
      spec.requirements.per_worker.memory_bytes = 16 * kGi;
      specs.push_back(spec);
    }
    specs.push_back(MakeShareJob(250 * (1 + static_cast<int>(rng() % 3))));
    specs.push_back(MakeCpuJob(4'000, 8 * kGi));
    specs.push_back(MakeJob(2, /*workers=*/2));
    const internal::WorkloadMix mixes[] = {MixOfSpecs(specs), MixOfSpecs({specs[0], specs[3]})};

    struct Running {
      Placement placement;
      const model::JobSpec* spec;
    };
    std::vector<Running> running;
    for (int i = 0; i < 120; ++i) {
      if (i == 60) {  // a node described anew: every memo of its old state is stale
        model::Node changed = nodes[rng() % nodes.size()];
        changed.labels["zone"] = "b";
        kept.UpsertNode(changed);
        fresh.UpsertNode(changed);
      }
      if (!running.empty() && rng() % 3 == 0) {
        const std::size_t end = rng() % running.size();
        kept.Release(running[end].placement, running[end].spec->requirements);
        fresh.Release(running[end].placement, running[end].spec->requirements);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(end));
      }
      const model::JobSpec& spec = specs[rng() % specs.size()];
      internal::PlanOptions options = Fgd(&mixes[i % 2]);
      const std::optional<Placement> a = TryPlace(kept, JobId(i + 1), spec, options);
      FragmentationCache memo;
      options.fragmentation_cache = &memo;
      const std::optional<Placement> b = TryPlace(fresh, JobId(i + 1), spec, options);
      ASSERT_EQ(a, b) << "job " << i;
      if (!a) continue;
      ASSERT_TRUE(kept.Allocate(*a, spec.requirements).has_value());
      ASSERT_TRUE(fresh.Allocate(*b, spec.requirements).has_value());
      running.push_back({*a, &spec});
    }
  }
}

TEST(FragmentationCaches, OneCachePerMixTheLeastRecentlyUsedDropped) {
  FragmentationCaches caches;
  std::vector<internal::WorkloadMix> mixes;
  for (int gpus = 1; gpus <= static_cast<int>(FragmentationCaches::kMostMixes) + 1; ++gpus) {
    mixes.push_back(MixOfSpecs({MakeJob(gpus)}));
  }
  const std::int64_t idle = FragmentationCache::GpuCode(0, false, 1000);
  const std::vector<std::int64_t> state = {64'000, idle, idle};
  // A value remembered through one mix's cache is there the next time that mix asks, and not in
  // another mix's.
  caches.For(mixes[0]).Get(state, mixes[0]);
  EXPECT_EQ(caches.For(mixes[0]).size(), 1U);
  EXPECT_EQ(caches.For(mixes[1]).size(), 0U);
  caches.For(mixes[1]).Get(state, mixes[1]);
  // Mixes 2 to kMostMixes - 1 fill the caches up, then mix 0 asks again (the most recent): mix 1
  // is now the least recently used, and one more mix drops its cache, not mix 0's.
  for (std::size_t i = 2; i < FragmentationCaches::kMostMixes; ++i) caches.For(mixes[i]);
  EXPECT_EQ(caches.For(mixes[0]).size(), 1U);
  caches.For(mixes.back());
  EXPECT_EQ(caches.For(mixes[0]).size(), 1U);
  EXPECT_EQ(caches.For(mixes[1]).size(), 0U);
}

// A mix past kMostMixes takes over the least recently used mix's cache: nothing it remembered
// (values, fits, node entries, kinds of request) is valid for the new mix.
TEST(FragmentationCaches, ARecycledCacheRemembersNothingOfItsFormerMix) {
  FragmentationCaches caches;
  std::vector<internal::WorkloadMix> mixes;
  for (int gpus = 1; gpus <= static_cast<int>(FragmentationCaches::kMostMixes) + 1; ++gpus) {
    mixes.push_back(MixOfSpecs({MakeJob(gpus)}));
  }
  const std::vector<std::int64_t> state = {64'000, FragmentationCache::GpuCode(0, false, 1000)};
  FragmentationCache& first = caches.For(mixes[0]);
  first.Get(state, mixes[0]);
  const int kind = first.DemandId("kind-a");
  first.Fits(kind, 4)[2].version = 7;
  first.Node(3).version = 9;
  first.Node(3).signature = state;
  for (std::size_t i = 1; i < FragmentationCaches::kMostMixes; ++i) caches.For(mixes[i]);
  FragmentationCache& recycled = caches.For(mixes.back());
  EXPECT_EQ(&recycled, &first);  // the least recently used mix's, its storage kept
  EXPECT_EQ(recycled.size(), 0U);
  EXPECT_EQ(recycled.Node(3).version, 0U);
  const int other = recycled.DemandId("kind-b");
  EXPECT_EQ(other, 0);  // kinds are numbered again from 0
  EXPECT_EQ(recycled.Fits(other, 4)[2].version, 0U);
  EXPECT_EQ(caches.For(mixes[0]).size(), 0U);  // mix 0 is new again
}

TEST(FragmentationCacheBounds, StatesFitsAndDemandsStartAgainPastTheirLimits) {
  FragmentationCache cache;
  const internal::WorkloadMix mix = MixOfSpecs({MakeJob(1)});
  const int model = cache.ModelId("h100");
  for (std::size_t i = 0; i < FragmentationCache::kMostStates; ++i) {
    const int free_millis = static_cast<int>(i % 1001);
    const std::int64_t cpu = static_cast<std::int64_t>(i / 1001);
    cache.Get({cpu, FragmentationCache::GpuCode(model, true, free_millis)}, mix);
  }
  EXPECT_EQ(cache.size(), FragmentationCache::kMostStates);
  cache.Get({1'000'000, FragmentationCache::GpuCode(model, false, 1000)}, mix);
  EXPECT_EQ(cache.size(), 1U);

  // Fits of every kind together stay within kMostFits: growing one kind past it drops the
  // others' (their ids stay valid, their fits start again unset).
  const std::size_t half = FragmentationCache::kMostFits / 2 + 1;
  const int a = cache.DemandId("a");
  const int b = cache.DemandId("b");
  cache.Fits(a, half)[0].version = 5;
  cache.Fits(b, 10)[0].version = 6;
  EXPECT_EQ(cache.Fits(a, half)[0].version, 5U);
  cache.Fits(b, half);
  EXPECT_EQ(cache.Fits(a, 1)[0].version, 0U);
  EXPECT_EQ(cache.Fits(b, 1)[0].version, 0U);
  cache.Reset();

  // Fits of a kind survive while fewer than kMostDemands kinds are known; the first new kind
  // past that drops every kind's fits.
  const int first = cache.DemandId("kind-0");
  cache.Fits(first, 4)[2].version = 7;
  for (std::size_t i = 1; i < FragmentationCache::kMostDemands; ++i) {
    cache.DemandId("kind-" + std::to_string(i));
  }
  EXPECT_EQ(cache.Fits(cache.DemandId("kind-0"), 4)[2].version, 7U);
  const int past = cache.DemandId("kind-past");
  EXPECT_EQ(past, 0);
  EXPECT_EQ(cache.Fits(cache.DemandId("kind-0"), 4)[2].version, 0U);
}

}  // namespace
}  // namespace drover::sched
