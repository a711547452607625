// JABAS's auto-scaling rule (seed 004 §6.3) on a hand-made case: three allocations (all
// the GPUs of server A, of B, of both), three forecast steps, epoch time = Σ p · iteration
// time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libmorph/adaptive/auto_scaler.h"
#include "libmorph/util/error.h"

namespace morph {
namespace {

HeteroConfig config(std::vector<std::string> servers, int gpus, std::int64_t batch, double iter_ms) {
  HeteroConfig c;
  c.server_gpus.assign(servers.size(), gpus / static_cast<int>(servers.size()));
  c.servers = std::move(servers);
  c.gpus = gpus;
  c.global_batch = batch;
  c.local_batch = iter_ms > 0 ? 32 : 0;  // 0: out of reach
  c.iter_ms = iter_ms;
  return c;
}

// Iteration ms at batches 256, 512, 1024:  A (4 GPUs) 100 180 350, B (4 GPUs) 150 260 500,
// A+B (8 GPUs) 120 150 200. With p = 100: A 63 s, B 91 s, A+B 47 s.
std::vector<std::vector<HeteroConfig>> hand_case() {
  const std::vector<std::int64_t> batches = {256, 512, 1024};
  const double a[] = {100, 180, 350}, b[] = {150, 260, 500}, ab[] = {120, 150, 200};
  std::vector<std::vector<HeteroConfig>> out;
  for (std::size_t t = 0; t < batches.size(); ++t)
    out.push_back({config({"A"}, 4, batches[t], a[t]), config({"B"}, 4, batches[t], b[t]),
                   config({"A", "B"}, 8, batches[t], ab[t])});
  return out;
}

TEST(AdaptiveScaling, PicksLeastEpochTime) {
  const AllocationChoice c = choose_allocation(hand_case(), AutoScaleOptions{});
  EXPECT_EQ(c.index, 2u);
  EXPECT_EQ(c.servers, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(c.server_gpus, (std::vector<int>{4, 4}));
  EXPECT_EQ(c.gpus, 8);
  EXPECT_DOUBLE_EQ(c.epoch_s, 47.0);
  EXPECT_DOUBLE_EQ(c.fastest_epoch_s, 47.0);
}

TEST(AdaptiveScaling, FirstStepAloneFavoursTheSmallSet) {
  // Without the forecast (the last batch, 256, for the whole epoch) A alone is fastest.
  const AllocationChoice c = choose_allocation({hand_case().front()}, AutoScaleOptions{});
  EXPECT_EQ(c.servers, (std::vector<std::string>{"A"}));
  EXPECT_DOUBLE_EQ(c.epoch_s, 10.0);
}

TEST(AdaptiveScaling, CostSlackTradesTimeForGpus) {
  AutoScaleOptions o;
  o.cost_slack = 0.4;  // A's 63 s is within 1.4 · 47 = 65.8 s; B's 91 s is not
  AllocationChoice c = choose_allocation(hand_case(), o);
  EXPECT_EQ(c.servers, (std::vector<std::string>{"A"}));
  EXPECT_DOUBLE_EQ(c.epoch_s, 63.0);
  EXPECT_DOUBLE_EQ(c.fastest_epoch_s, 47.0);
  o.cost_slack = 0.3;  // 61.1 s: only A+B
  c = choose_allocation(hand_case(), o);
  EXPECT_EQ(c.gpus, 8);
}

TEST(AdaptiveScaling, SetThatCannotRunAStepIsNoCandidate) {
  std::vector<std::vector<HeteroConfig>> steps = hand_case();
  steps[2][2] = config({"A", "B"}, 8, 1024, 0);
  EXPECT_EQ(choose_allocation(steps, AutoScaleOptions{}).servers, (std::vector<std::string>{"A"}));
  for (auto& step : steps)
    for (auto& c : step) c.local_batch = 0;
  EXPECT_THROW(choose_allocation(steps, AutoScaleOptions{}), Error);
}

// A forecast repeats its batches: steps may share one configuration list, each counted.
TEST(AdaptiveScaling, SharedStepsCountEachTime) {
  const std::vector<std::vector<HeteroConfig>> distinct = hand_case();
  // 256, 256, 1024, 256: A 100+100+350+100 = 650 ms, B 950, A+B 560 per iteration.
  const std::vector<const std::vector<HeteroConfig>*> steps{&distinct[0], &distinct[0], &distinct[2], &distinct[0]};
  const AllocationChoice c = choose_allocation(steps, AutoScaleOptions{});
  EXPECT_EQ(c.servers, (std::vector<std::string>{"A", "B"}));
  EXPECT_DOUBLE_EQ(c.epoch_s, 56.0);
  AutoScaleOptions o;
  o.cost_slack = 0.2;  // A's 65 s is within 1.2 · 56 = 67.2 s
  EXPECT_EQ(choose_allocation(steps, o).servers, std::vector<std::string>{"A"});
}

TEST(AdaptiveScaling, RejectsInconsistentInput) {
  std::vector<std::vector<HeteroConfig>> steps = hand_case();
  EXPECT_THROW(choose_allocation(std::vector<std::vector<HeteroConfig>>{}, AutoScaleOptions{}), Error);
  steps[1].pop_back();
  EXPECT_THROW(choose_allocation(steps, AutoScaleOptions{}), Error);
  steps = hand_case();
  steps[1][0].servers = {"C"};
  try {
    choose_allocation(steps, AutoScaleOptions{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "auto-scaling: step 1 lists allocation C:4 where step 0 lists A:4");
  }
  steps = hand_case();
  steps[2][0].server_gpus = {2};  // two of A's four GPUs: another allocation of the same server
  try {
    choose_allocation(steps, AutoScaleOptions{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "auto-scaling: step 2 lists allocation A:2 where step 0 lists A:4");
  }
  AutoScaleOptions o;
  o.cost_slack = -0.1;
  EXPECT_THROW(choose_allocation(hand_case(), o), Error);
  o = AutoScaleOptions{};
  o.interval_iterations = 0;
  EXPECT_THROW(choose_allocation(hand_case(), o), Error);
}

}  // namespace
}  // namespace morph
