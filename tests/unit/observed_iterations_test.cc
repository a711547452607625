#include "libmorph/refit/observed_iterations.h"

#include <initializer_list>

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

// A plan for 2 GPUs training a global batch of 64: 2 replicas x 4 steps x 8 samples.
constexpr const char* kPlan2 = "dp=2 tp=1 pp=1 zero=0 offload=0 gc=0 ga=4 mb=1 mbs=8";
constexpr std::int64_t kBatch = 64;

std::vector<ObservedIteration> parse(const std::string& text, std::int64_t batch = kBatch) {
  return parse_observed_iterations(text, "obs.csv", test::test_cluster(), batch);
}

// The text must be refused with a message that contains every word.
void expect_refused(const std::string& text, std::initializer_list<const char*> words) {
  try {
    parse(text);
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const char* word : words) EXPECT_NE(message.find(word), std::string::npos) << message << " lacks " << word;
  }
}

TEST(ObservedIterations, ReadsPlansAllocationsTimesAndCpus) {
  const std::string text = std::string("\xEF\xBB\xBFplan,gpus,iter_ms,cpus_per_gpu\r\n") + kPlan2 +
                           ",2xbig,812.5,3\r\n" +
                           "dp=4 tp=1 pp=1 zero=2 offload=1 gc=1 ga=2 mb=1 mbs=8, 2x2xbig ,1500,\r\n\n";
  const std::vector<ObservedIteration> o = parse(text);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].source, "obs.csv:2");
  EXPECT_EQ(o[0].plan, parse_plan(kPlan2, "t"));
  EXPECT_EQ(o[0].allocation.gpus(), 2);
  EXPECT_EQ(o[0].allocation.min_cpus_per_gpu(), 3);
  EXPECT_DOUBLE_EQ(o[0].iter_ms, 812.5);
  EXPECT_EQ(o[1].source, "obs.csv:3");
  EXPECT_TRUE(o[1].plan.offload);
  EXPECT_EQ(o[1].allocation.nodes.size(), 2u);
  // An empty cpus_per_gpu is the node's share: 64 CPUs for 8 GPUs.
  EXPECT_EQ(o[1].allocation.min_cpus_per_gpu(), 8);
}

TEST(ObservedIterations, TheCpuColumnIsOptionalAndTheBatchCheckCanBeLeftOut) {
  const auto o = parse(std::string("iter_ms,gpus,plan\n10,2xbig,") + kPlan2 + "\n", 0);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_DOUBLE_EQ(o[0].iter_ms, 10);
  EXPECT_EQ(parse(std::string("plan,gpus,iter_ms\n") + kPlan2 + ",2xbig,10\n", 0).size(), 1u);
}

TEST(ObservedIterations, RefusesBadHeaders) {
  expect_refused("", {"obs.csv", "header"});
  expect_refused("plan,gpus,iter_ms\n", {"obs.csv", "no observed iterations"});
  expect_refused("plan,gpus,iter_ms,speed\n", {"obs.csv:1", "unknown column", "speed"});
  expect_refused("plan,gpus\n", {"obs.csv:1", "missing column iter_ms"});
  expect_refused("plan,gpus,iter_ms,plan\n", {"obs.csv:1", "plan", "twice"});
}

TEST(ObservedIterations, RefusesEachKindOfBadLineNamingFileLineAndColumn) {
  const std::string head = "plan,gpus,iter_ms,cpus_per_gpu\n";
  const std::string good = std::string(kPlan2) + ",2xbig,100,4\n";
  expect_refused(head + good + "dp=2,2xbig,100,4\n", {"obs.csv:3", "column plan", "missing plan key"});
  expect_refused(head + good + "dp=2 tp=1 pp=1 zero=9 offload=0 gc=0 ga=4 mb=1 mbs=8,2xbig,100,4\n",
                 {"obs.csv:3", "column plan", "zero"});
  expect_refused(head + kPlan2 + ",2xhuge,100,4\n", {"obs.csv:2", "column gpus", "unknown GPU type"});
  expect_refused(head + kPlan2 + ",9xbig,100,4\n", {"obs.csv:2", "column gpus"});
  expect_refused(head + kPlan2 + ",4xbig,100,4\n", {"obs.csv:2", "column gpus", "4 GPUs", "dp*tp*pp = 2"});
  expect_refused(head + kPlan2 + ",2xbig,fast,4\n", {"obs.csv:2", "column iter_ms", "not a number"});
  expect_refused(head + kPlan2 + ",2xbig,0,4\n", {"obs.csv:2", "column iter_ms", "> 0"});
  expect_refused(head + kPlan2 + ",2xbig,-5,4\n", {"obs.csv:2", "column iter_ms"});
  expect_refused(head + kPlan2 + ",2xbig,,4\n", {"obs.csv:2", "column iter_ms", "empty"});
  expect_refused(head + kPlan2 + ",2xbig,100,0\n", {"obs.csv:2", "column cpus_per_gpu"});
  expect_refused(head + kPlan2 + ",2xbig,100,two\n", {"obs.csv:2", "column cpus_per_gpu"});
  expect_refused(head + kPlan2 + ",2xbig,100\n", {"obs.csv:2", "3 fields", "header has 4"});
  // 2 x 2 x 8 = 32 samples, not the workload's 64.
  expect_refused(head + "dp=2 tp=1 pp=1 zero=0 offload=0 gc=0 ga=2 mb=1 mbs=8,2xbig,100,4\n",
                 {"obs.csv:2", "column plan", "global batch of 32", "64"});
}

TEST(ObservedIterations, ReadsAFileAndNamesAMissingOne) {
  const std::string dir = ::testing::TempDir();
  EXPECT_THROW(read_observed_iterations(dir + "/no-such-observations.csv", "--points", test::test_cluster(), kBatch),
               Error);
  try {
    read_observed_iterations(dir + "/no-such-observations.csv", "--points", test::test_cluster(), kBatch);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--points"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace morph
