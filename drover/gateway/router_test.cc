#include "drover/gateway/router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace drover::gateway {
namespace {

Backend MakeBackend(const std::string& name, int endpoints, double cost = 0) {
  Backend backend{name, cost, {}};
  for (int i = 0; i < endpoints; ++i) {
    Endpoint endpoint;
    endpoint.url = endpoint.name = "http://" + name + ":" + std::to_string(8000 + i);
    backend.endpoints.push_back(std::move(endpoint));
  }
  return backend;
}

Router MakeRouter(std::vector<Backend> backends, Policy policy = Policy::kLeastOutstanding,
                  BreakerOptions breaker = {}, RetryBudgetOptions budget = {}) {
  RouteOptions options;
  options.policy = policy;
  return Router(std::move(backends), options, breaker, budget, 42);
}

TEST(CircuitBreaker, OpensAfterThresholdThenHalfOpensForOneProbeAndClosesOnSuccess) {
  CircuitBreaker breaker(BreakerOptions{.failure_threshold = 3, .open_ms = 1000});
  breaker.OnFailure(0);
  breaker.OnFailure(0);
  EXPECT_EQ(breaker.state(0), CircuitBreaker::State::kClosed);
  breaker.OnFailure(10);
  EXPECT_EQ(breaker.state(10), CircuitBreaker::State::kOpen);
  EXPECT_FALSE(breaker.Available(500));
  EXPECT_TRUE(breaker.Available(1010));  // time is up: one probe may pass
  breaker.OnSent(1010);
  EXPECT_EQ(breaker.state(1010), CircuitBreaker::State::kHalfOpen);
  EXPECT_FALSE(breaker.Available(1010));  // only one
  breaker.OnSuccess();
  EXPECT_EQ(breaker.state(1010), CircuitBreaker::State::kClosed);
  EXPECT_TRUE(breaker.Available(1010));
}

TEST(CircuitBreaker, HalfOpenFailureReopensForTwiceThePeriodUpToTheMaximum) {
  CircuitBreaker breaker(
      BreakerOptions{.failure_threshold = 1, .open_ms = 1000, .max_open_ms = 3000});
  breaker.OnFailure(0);
  breaker.OnSent(1000);
  breaker.OnFailure(1000);
  EXPECT_EQ(breaker.state(2999), CircuitBreaker::State::kOpen);
  EXPECT_TRUE(breaker.Available(3000));  // 2 s
  breaker.OnSent(3000);
  breaker.OnFailure(3000);
  EXPECT_FALSE(breaker.Available(5999));  // 3 s: the maximum
  EXPECT_TRUE(breaker.Available(6000));
  breaker.OnSent(6000);
  breaker.OnSuccess();
  breaker.OnFailure(7000);  // closed again: the period starts over at open_ms
  EXPECT_TRUE(breaker.Available(8000));
}

TEST(CircuitBreaker, FailedProbesKeepAnOpenBreakerOpenAndSuccessfulOnesChangeNothing) {
  CircuitBreaker breaker(BreakerOptions{.failure_threshold = 2, .open_ms = 1000});
  breaker.OnProbeFailure(0);
  EXPECT_EQ(breaker.state(0), CircuitBreaker::State::kClosed);
  breaker.OnProbeFailure(0);
  EXPECT_EQ(breaker.state(0), CircuitBreaker::State::kOpen);
  breaker.OnProbeFailure(900);  // still down: no real request at 1000
  EXPECT_FALSE(breaker.Available(1500));
  EXPECT_TRUE(breaker.Available(1900));
}

TEST(RetryBudget, AllowsMinimumPlusRatioOfRequestsInTheWindow) {
  RetryBudget budget(RetryBudgetOptions{.ratio = 0.2, .min_retries = 1, .window_ms = 10'000});
  for (int i = 0; i < 10; ++i) budget.OnRequest(1000);
  // 1 + 0.2 x 10 = 3 retries.
  EXPECT_TRUE(budget.TryRetry(1000));
  EXPECT_TRUE(budget.TryRetry(1000));
  EXPECT_TRUE(budget.TryRetry(1000));
  EXPECT_FALSE(budget.TryRetry(1000));
  // Past the window, the old requests and retries no longer count.
  EXPECT_TRUE(budget.TryRetry(20'000));
  EXPECT_FALSE(budget.TryRetry(20'000));
}

TEST(Router, PowerOfTwoChoicesPrefersTheLessLoadedEndpoint) {
  Router router = MakeRouter({MakeBackend("a", 2)});
  const std::string busy = router.backends()[0].endpoints[0].url;
  for (int i = 0; i < 5; ++i) router.OnSent(Pick{0, busy}, 0);
  // With two endpoints both are drawn every time: the idle one always wins.
  for (int i = 0; i < 20; ++i) {
    const auto pick = router.Choose("", false, {}, 0);
    ASSERT_TRUE(pick);
    EXPECT_NE(pick->url, busy);
  }
}

TEST(Router, LeastOutstandingSpreadsLoadEvenly) {
  Router router = MakeRouter({MakeBackend("a", 4)});
  std::map<std::string, int> counts;
  for (int i = 0; i < 400; ++i) {
    const auto pick = router.Choose("", false, {}, 0);
    ASSERT_TRUE(pick);
    router.OnSent(*pick, 0);  // never completed: outstanding grows
    ++counts[pick->url];
  }
  for (const auto& [url, count] : counts) {
    EXPECT_GE(count, 90) << url;
    EXPECT_LE(count, 110) << url;
  }
}

TEST(Router, PrefixAffinitySendsRepeatPrefixesToOneEndpoint) {
  Router router = MakeRouter({MakeBackend("a", 3)}, Policy::kPrefixAffinity);
  const auto first = router.Choose("You are a helpful assistant", false, {}, 0);
  ASSERT_TRUE(first);
  for (int i = 0; i < 10; ++i) {
    const auto again = router.Choose("You are a helpful assistant", false, {}, 0);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->url, first->url);
    router.OnSent(*again, 0);
    router.OnDone(*again, true, 0);
  }
}

TEST(Router, PrefixAffinitySpreadsDistinctPrefixesThatDifferOnlyAtTheEnd) {
  Router router = MakeRouter({MakeBackend("a", 3)}, Policy::kPrefixAffinity);
  std::map<std::string, int> counts;
  for (int i = 0; i < 300; ++i)
    ++counts[router.Choose("prefix " + std::to_string(i), false, {}, 0)->url];
  ASSERT_EQ(counts.size(), 3u);
  for (const auto& [url, count] : counts) EXPECT_GE(count, 50) << url;
}

TEST(Router, PrefixAffinityKeepsEveryEndpointWithinTheLoadBound) {
  Router router = MakeRouter({MakeBackend("a", 4)}, Policy::kPrefixAffinity);
  // One hot prefix: requests in flight spill over once its home holds (1 + 0.25) x the mean.
  int total = 0;
  for (int i = 0; i < 200; ++i) {
    const auto pick = router.Choose("hot prefix", false, {}, 0);
    ASSERT_TRUE(pick);
    router.OnSent(*pick, 0);
    ++total;
    for (const Endpoint& endpoint : router.backends()[0].endpoints) {
      EXPECT_LE(endpoint.outstanding, std::ceil(1.25 * total / 4.0)) << endpoint.url;
    }
  }
}

TEST(Router, OpenBreakerRoutesAroundAnEndpoint) {
  Router router = MakeRouter({MakeBackend("a", 2)}, Policy::kLeastOutstanding,
                             BreakerOptions{.failure_threshold = 2, .open_ms = 5000});
  const std::string dead = router.backends()[0].endpoints[0].url;
  for (int i = 0; i < 2; ++i) {
    router.OnSent(Pick{0, dead}, 0);
    router.OnDone(Pick{0, dead}, false, 0);
  }
  for (int i = 0; i < 20; ++i) EXPECT_NE(router.Choose("", false, {}, 100)->url, dead);
}

TEST(Router, FailsOverInOrderAndSkipsTriedEndpoints) {
  Router router =
      MakeRouter({MakeBackend("primary", 1), MakeBackend("second", 1), MakeBackend("third", 1)});
  const auto first = router.Choose("", false, {}, 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->backend, 0);
  const auto second = router.Choose("", false, {*first}, 0);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->backend, 1);
  const auto third = router.Choose("", false, {*first, *second}, 0);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->backend, 2);
  EXPECT_FALSE(router.Choose("", false, {*first, *second, *third}, 0));
}

TEST(Router, FailsBackToThePrimaryWhenItRecovers) {
  Router router =
      MakeRouter({MakeBackend("primary", 1), MakeBackend("second", 1)}, Policy::kLeastOutstanding,
                 BreakerOptions{.failure_threshold = 1, .open_ms = 1000});
  const Pick primary{0, router.backends()[0].endpoints[0].url};
  router.OnSent(primary, 0);
  router.OnDone(primary, false, 0);
  EXPECT_EQ(router.Choose("", false, {}, 500)->backend, 1);
  const auto probe = router.Choose("", false, {}, 1000);  // half-open: the primary again
  ASSERT_TRUE(probe);
  EXPECT_EQ(probe->backend, 0);
  router.OnSent(*probe, 1000);
  EXPECT_EQ(router.Choose("", false, {}, 1000)->backend, 1);  // one probe at a time
  router.OnDone(*probe, true, 1001);
  EXPECT_EQ(router.Choose("", false, {}, 1001)->backend, 0);
}

TEST(Router, CheapestChoosesTheLowestCostHealthyBackend) {
  Router router = MakeRouter(
      {MakeBackend("dear", 1, 2.0), MakeBackend("cheap", 1, 0.1), MakeBackend("mid", 1, 0.5)},
      Policy::kLeastOutstanding, BreakerOptions{.failure_threshold = 1, .open_ms = 1000});
  EXPECT_EQ(router.Choose("", false, {}, 0)->backend, 0);  // not allowed: the configured order
  EXPECT_EQ(router.Choose("", true, {}, 0)->backend, 1);
  const Pick cheap{1, router.backends()[1].endpoints[0].url};
  router.OnSent(cheap, 0);
  router.OnDone(cheap, false, 0);
  EXPECT_EQ(router.Choose("", true, {}, 10)->backend, 2);  // the cheapest healthy one
}

TEST(Router, SetEndpointsKeepsTheStateOfEndpointsThatStay) {
  Router router = MakeRouter({MakeBackend("a", 2)});
  const std::string kept = router.backends()[0].endpoints[1].url;
  router.OnSent(Pick{0, kept}, 0);
  router.SetEndpoints(0, {kept, "http://new:1"}, {"job 7", "job 8"});
  ASSERT_EQ(router.backends()[0].endpoints.size(), 2u);
  EXPECT_EQ(router.Find(Pick{0, kept})->outstanding, 1);
  EXPECT_EQ(router.Find(Pick{0, kept})->name, "job 7");
  // An attempt to a removed endpoint ends without effect.
  router.OnDone(Pick{0, "http://a:8000"}, false, 0);
  EXPECT_EQ(router.Find(Pick{0, "http://a:8000"}), nullptr);
}

}  // namespace
}  // namespace drover::gateway
