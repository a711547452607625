#include "libmorph/record/gpu_groups.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <set>
#include <string>

#include <fmt/format.h>

#include "libmorph/cluster/cluster.h"
#include "libmorph/launch/rank_env.h"
#include "libmorph/record/job_record.h"
#include "libmorph/record/plan_env.h"
#include "libmorph/record/task_variables.h"
#include "libmorph/request/limits.h"
#include "libmorph/util/error.h"

namespace morph {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_gpu_groups(text, "groups");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// 1 a100 node and 1 v100 node of 4 GPUs, local batch 8: an a100 accumulates 3
// micro-batches, a v100 1, so 4*24 + 4*8 = 128 samples.
JobRecord hetero_record() {
  JobRecord r;
  set_morph_option(r.request, "model", "gpt2-1.5b");
  set_morph_option(r.request, "batch", "128");
  Placement& p = r.current;
  p.nodes = 2;
  p.gpus_per_node = 4;
  p.cpus_per_gpu = 4;
  p.plan.dp = 8;
  p.plan.micro_batch_size = 8;
  p.iter_ms = 250;
  p.groups = {{"a100-80g", 1, 1, 3}, {"v100-32g", 1, 1, 1}};
  return r;
}

TEST(GpuGroups, RoundTripAndSamples) {
  const GpuGroups g = {{"a100-80g", 2, 2, 3}, {"v100-32g", 1, 1, 1}};
  EXPECT_EQ(to_string(g), "a100-80g:nodes=2:workers=2:ga=3,v100-32g:nodes=1:workers=1:ga=1");
  EXPECT_EQ(parse_gpu_groups(to_string(g), "groups"), g);
  EXPECT_EQ(g[0].samples_per_gpu(8), 48);
  // Counts at their limits do not overflow (UBSan in the sanitizer build).
  EXPECT_EQ((GpuGroup{"a100-80g", 1, 1 << 16, 1 << 16}.samples_per_gpu(1 << 16)), std::int64_t{1} << 48);
  EXPECT_EQ(group_types(g), "a100-80g+v100-32g");
  ASSERT_NE(find_group(g, "v100-32g"), nullptr);
  EXPECT_EQ(find_group(g, "v100-32g")->nodes, 1);
  EXPECT_EQ(find_group(g, "h100"), nullptr);
}

TEST(GpuGroups, StrictParsingNamesTheProblem) {
  EXPECT_NE(error_of("a100:nodes=1:workers=1:ga=1").find("one group"), std::string::npos);
  EXPECT_NE(error_of("a100:nodes=1:workers=1:ga=1,a100:nodes=1:workers=1:ga=2").find("a100 in two groups"),
            std::string::npos);
  EXPECT_NE(error_of("a100:nodes=1:workers=1,v100:nodes=1:workers=1:ga=1").find("not TYPE:nodes=N:workers=W:ga=A"),
            std::string::npos);
  EXPECT_NE(error_of("a100:nodes=1:ga=1:workers=1,v100:nodes=1:workers=1:ga=1").find("expected workers="),
            std::string::npos);
  EXPECT_NE(error_of("a100:nodes=0:workers=1:ga=1,v100:nodes=1:workers=1:ga=1").find("a100 nodes"),
            std::string::npos);
  EXPECT_NE(error_of(":nodes=1:workers=1:ga=1,v100:nodes=1:workers=1:ga=1").find("not TYPE"), std::string::npos);
  std::string many;
  for (int i = 0; i <= MORPH_MAX_GPU_GROUPS; ++i) many += fmt::format("{}t{}:nodes=65536:workers=1:ga=1", i ? "," : "", i);
  EXPECT_NE(error_of(many).find("at most 64 GPU types"), std::string::npos);
}

TEST(GpuGroups, SlurmConstraintUsesTheNodeFeature) {
  Cluster c;
  GpuType a100;
  a100.name = "a100-80g";
  c.add_gpu_type(a100);
  c.add_node_type({.name = "hgx", .gpu = "a100-80g", .gpus = 8, .features = {"a100", "ib"}});
  const GpuGroups g = {{"a100-80g", 2, 1, 2}, {"v100-32g", 1, 1, 1}};
  // v100-32g has no node type: its name serves as the feature.
  EXPECT_EQ(group_constraint(g, c, 4, 0), "[a100*2&v100-32g*1]");
  c.add_node({"gpu[1-2]", "hgx"});
  c.add_node({"node7", "hgx"});
  EXPECT_EQ(c.gpu_of_node("node7"), "a100-80g");
  EXPECT_EQ(c.gpu_of_node("node8"), "");
}

// A group's count names a node type that holds the GPUs and CPUs per node, one with
// enough nodes where there is one. Before, it named the first node type of the GPU type:
// a group of 8 GPUs per node asked for the 4-GPU nodes' feature.
TEST(GpuGroups, SlurmConstraintNamesANodeTypeThatHoldsTheGroup) {
  Cluster c;
  GpuType a100;
  a100.name = "a100-80g";
  c.add_gpu_type(a100);
  GpuType v100;
  v100.name = "v100-32g";
  c.add_gpu_type(v100);
  c.add_node_type({.name = "a4", .gpu = "a100-80g", .gpus = 4, .cpus = 16, .features = {"a4"}});
  c.add_node_type({.name = "a8", .gpu = "a100-80g", .gpus = 8, .cpus = 32, .features = {"a8"}});
  c.add_node_type({.name = "v8", .gpu = "v100-32g", .gpus = 8, .cpus = 32, .features = {"volta"}});
  c.add_node({"s1", "a4"});
  c.add_node({"b1", "a8"});
  c.add_node({"b2", "a8"});
  c.add_node({"v1", "v8"});
  EXPECT_EQ(group_constraint({{"a100-80g", 1, 1, 2}, {"v100-32g", 1, 1, 1}}, c, 8, 32), "[a8*1&volta*1]");
  EXPECT_EQ(group_constraint({{"a100-80g", 1, 1, 2}, {"v100-32g", 1, 1, 1}}, c, 4, 16), "[a4*1&volta*1]");
  // Two 4-GPU nodes: only the 8-GPU type lists two.
  EXPECT_EQ(group_constraint({{"a100-80g", 2, 1, 2}, {"v100-32g", 1, 1, 1}}, c, 4, 16), "[a8*2&volta*1]");
  // 20 CPUs per node: not on a 16-CPU node.
  EXPECT_EQ(group_constraint({{"a100-80g", 1, 1, 2}, {"v100-32g", 1, 1, 1}}, c, 4, 20), "[a8*1&volta*1]");
}

// Backward compatible: a record without groups= is read as before; one with groups=
// round-trips and is checked as a whole.
TEST(JobRecordGroups, RoundTripAndChecks) {
  const JobRecord r = hetero_record();
  const std::string text = to_admin_comment(r);
  EXPECT_NE(text.find(" type=- "), std::string::npos) << text;
  EXPECT_NE(text.find(" groups=a100-80g:nodes=1:workers=1:ga=3,v100-32g:nodes=1:workers=1:ga=1"), std::string::npos);
  EXPECT_EQ(parse_admin_comment(text), r);
  EXPECT_EQ(describe(r.current), "2 nodes x 4 a100-80g+v100-32g GPUs");
  auto message = [&](std::string_view from, std::string_view to) {
    std::string bad = text;
    bad.replace(bad.find(from), from.size(), to);
    try {
      parse_admin_comment(bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("ga=3,", "ga=2,").find("groups= process 96 samples per iteration, the batch is 128"),
            std::string::npos);
  EXPECT_NE(message("v100-32g:nodes=1", "v100-32g:nodes=2").find("groups= hold 3 nodes, the placement 2"),
            std::string::npos);
  EXPECT_NE(message(" type=- ", " type=a100-80g ").find("names its types in the groups"), std::string::npos);
  EXPECT_NE(message(" ga=1 ", " ga=2 ").find("needs dp=8 (every GPU) and tp=pp=ga=mb=1"), std::string::npos);
  JobRecord homogeneous = r;
  homogeneous.current.groups.clear();
  homogeneous.current.gpu_type = "a100-80g";
  homogeneous.current.plan.ga_steps = 2;
  EXPECT_EQ(to_admin_comment(homogeneous).find("groups="), std::string::npos);
  EXPECT_EQ(parse_admin_comment(to_admin_comment(homogeneous)), homogeneous);
}

TEST(PlanEnv, EveryVariableOfAPlanIsATaskVariable) {
  // What plan_environment sets for some record, and what it leaves out for this one: every
  // name it can give. The C list spank_morph drops in a nested sbatch must be exactly those
  // and the three the plugin adds.
  const JobRecord r = hetero_record();
  std::set<std::string> given;
  for (const auto& [name, value] : plan_environment(r)) given.insert(name);
  for (const std::string& name : plan_variables_not_set(r)) given.insert(name);
  given.insert({"MORPH_RECORD", "MORPH_RECORD_JOB", "MORPH_PLAN_ERROR"});
  const char* const listed[] = {MORPH_TASK_VARIABLES};
  EXPECT_EQ(std::set<std::string>(std::begin(listed), std::end(listed)), given);
  EXPECT_EQ(std::size(listed), given.size());  // no name twice
}

TEST(JobRecordGroups, EnvironmentAndRankBatches) {
  const JobRecord r = hetero_record();
  const auto env = plan_environment(r);
  auto get = [&](const char* name) {
    for (const auto& [k, v] : env)
      if (k == name) return v;
    return std::string("missing");
  };
  EXPECT_EQ(get("MORPH_GPU_TYPE"), "a100-80g+v100-32g");
  EXPECT_EQ(get("MORPH_GPU_GROUPS"), to_string(r.current.groups));
  EXPECT_EQ(get("MORPH_LOCAL_BATCH"), "8");
  EXPECT_EQ(get("MORPH_GA"), "missing");  // per rank, from morphrun
  EXPECT_EQ(plan_variables_not_set(r), (std::vector<std::string>{"MORPH_GA", "MORPH_ADAPTIVE_BATCH"}));
  const launch::RankBatch a100 = launch::rank_batch(r.current, "a100-80g");
  EXPECT_EQ(a100.local_batch, 8);
  EXPECT_EQ(a100.workers, 1);
  EXPECT_EQ(a100.ga_steps, 3);
  EXPECT_EQ(launch::rank_batch(r.current, "v100-32g").ga_steps, 1);
  EXPECT_THROW(launch::rank_batch(r.current, "h100"), Error);
  try {
    launch::rank_batch(r.current, "");
    ADD_FAILURE() << "no error for a node of unknown type";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("morph.conf names no GPU type for this node"), std::string::npos);
  }
  // Homogeneous: the plan's GA, one worker, the samples of one accumulation step.
  Placement p;
  p.gpu_type = "a100-80g";
  p.plan.dp = 2;
  p.plan.pp = 2;
  p.plan.ga_steps = 4;
  p.plan.micro_batches = 2;
  p.plan.micro_batch_size = 3;
  const launch::RankBatch b = launch::rank_batch(p, "ignored");
  EXPECT_EQ(b.local_batch, 6);
  EXPECT_EQ(b.workers, 1);
  EXPECT_EQ(b.ga_steps, 4);
}

}  // namespace
}  // namespace morph
