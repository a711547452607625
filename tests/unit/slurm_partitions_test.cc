// slurm.conf's partitions (libmorph/cluster/slurm_partitions) and where they let a job run.
#include "libmorph/cluster/slurm_partitions.h"

#include <map>

#include <gtest/gtest.h>

#include "libmorph/config/morph_conf.h"
#include "libmorph/util/error.h"

namespace morph {
namespace {

std::map<std::string, std::string>& included() {
  static std::map<std::string, std::string> files;
  return files;
}
std::string read_included(const std::string& path) {
  if (!included().count(path)) throw Error("no file " + path);
  return included().at(path);
}

std::vector<SlurmPartition> parse(const std::string& text) {
  return parse_slurm_partitions(text, "slurm.conf", "/etc/slurm", read_included);
}

TEST(SlurmPartitions, ReadsNodesMaxNodesAndTheDefault) {
  const auto p = parse(
      "ClusterName=x  # a comment\n"
      "NodeName=a100-[1-2] Gres=gpu:a100:8\n"
      "partitionname=DEFAULT MaxNodes=4\n"
      "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
      "PartitionName=old Nodes=v100-[1-2],v100-9 \\\n"
      "   MaxNodes=1   # continued\n"
      "PartitionName=big Nodes=\"a100-[1-2]\" MAXNODES=UNLIMITED\n");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].name, "gpu");
  EXPECT_TRUE(p[0].all_nodes);
  EXPECT_TRUE(p[0].is_default);
  EXPECT_EQ(p[0].max_nodes, 4);  // PartitionName=DEFAULT's
  EXPECT_EQ(p[1].nodes, (std::vector<std::string>{"v100-1", "v100-2", "v100-9"}));
  EXPECT_FALSE(p[1].all_nodes);
  EXPECT_FALSE(p[1].is_default);
  EXPECT_EQ(p[1].max_nodes, 1);
  EXPECT_EQ(p[2].nodes, (std::vector<std::string>{"a100-1", "a100-2"}));
  EXPECT_EQ(p[2].max_nodes, 0);
}

TEST(SlurmPartitions, ExpandsNodeSetsAndReadsIncludedFiles) {
  included()["/etc/slurm/parts.conf"] = "PartitionName=volta Nodes=old-set,t4-1\n";
  included()["/srv/more.conf"] = "PartitionName=any Nodes=by-feature\n";
  const auto p = parse(
      "NodeSet=old-set Nodes=v100-[1-2]\n"
      "NodeSet=by-feature Feature=gpu\n"
      "Include parts.conf\n"
      "include /srv/more.conf\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].nodes, (std::vector<std::string>{"v100-1", "v100-2", "t4-1"}));
  EXPECT_FALSE(p[0].all_nodes);
  EXPECT_TRUE(p[1].all_nodes);  // a node set by feature: Morph does not know which nodes
}

// What Slurm's own reader accepts (read_config.c, parse_config.c): a NodeSet named before
// it is defined, a continued line joined as it is, spaces around '=', an escaped '#',
// %c in an Include, boolean spellings and MinNodes.
TEST(SlurmPartitions, ReadsTheFileAsSlurmDoes) {
  included()["/etc/slurm/parts-morphtest.conf"] = "PartitionName = late Nodes = later Default = true\n";
  const auto p = parse(
      "ClusterName=morphtest\n"
      "PartitionName=early Nodes=later MinNodes=2\n"
      "NodeSet=later Nodes=v100-[1-2]\n"
      "PartitionName=joined Nodes=a100-[1-2],\\\n"
      "v100-1 MaxNodes=3\n"
      "PartitionName=hash\\#1 Nodes=a100-1 MaxNodes=2 # a comment\n"
      "Include parts-%c.conf\n");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].nodes, (std::vector<std::string>{"v100-1", "v100-2"}));
  EXPECT_EQ(p[0].min_nodes, 2);
  EXPECT_EQ(p[1].nodes, (std::vector<std::string>{"a100-1", "a100-2", "v100-1"}));
  EXPECT_EQ(p[1].max_nodes, 3);
  EXPECT_EQ(p[2].name, "hash#1");
  EXPECT_EQ(p[2].max_nodes, 2);
  EXPECT_EQ(p[3].name, "late");
  EXPECT_EQ(p[3].nodes, (std::vector<std::string>{"v100-1", "v100-2"}));
  EXPECT_TRUE(p[3].is_default);
  const auto b = partition_bounds(p, "early,joined");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->min_nodes, 0);  // the least of 2 and none
  EXPECT_EQ(partition_bounds(p, "early")->min_nodes, 2);
}

TEST(SlurmPartitions, AMalformedPartitionLineIsAnErrorNamingIt) {
  try {
    parse("PartitionName=x Nodes=a[1-\n");
    FAIL() << "accepted a broken host list";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("PartitionName=x Nodes=a[1-"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse("PartitionName=x MaxNodes=many\n"), Error);
  EXPECT_THROW(parse("PartitionName=x Nodes\n"), Error);
  EXPECT_THROW(parse("Include missing.conf\n"), Error);
}

// Review of the slurm.conf reader: a lone "" read outside its word (an abort under
// _GLIBCXX_ASSERTIONS, in slurmctld) or dropped its line; %c was not lower-cased as
// Slurm stores ClusterName; PartitionName=DEFAULT's Default=YES was dropped; any trailing
// backslash continued a line, where Slurm continues only on an odd run; errors named no
// line.
TEST(SlurmPartitions, ReadsWhatSlurmReadsAtTheEdges) {
  auto p = parse("\"\" PartitionName=gpu Nodes=n[1-2]\nPartitionName=cpu Nodes=n3 \"\"\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, "gpu");
  EXPECT_EQ(p[1].nodes, (std::vector<std::string>{"n3"}));
  included()["/etc/slurm/parts/alpha.conf"] = "PartitionName=lower Nodes=n1\n";
  p = parse("ClusterName=Alpha\nInclude parts/%c.conf\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].name, "lower");
  try {
    parse("Include parts/%c.conf\n");
    FAIL() << "%c without a ClusterName";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "slurm.conf:1: 'Include parts/%c.conf': Include names %c, and no ClusterName comes before it");
  }
  p = parse("PartitionName=DEFAULT Default=YES\nPartitionName=a Nodes=n1\nPartitionName=b Nodes=n2\n");
  ASSERT_TRUE(partition_bounds(p, ""));
  EXPECT_EQ(partition_bounds(p, "")->names, "b");  // the last Default=YES, as Slurm takes it
  // Two trailing backslashes (an escaped one) end the line; three continue it.
  p = parse("NodeName=n[1-2] Comment=x\\\\\nPartitionName=b Nodes=n2\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].name, "b");
  p = parse("NodeName=n[1-2] Comment=x\\\\\\\nPartitionName=b Nodes=n2\n");
  EXPECT_TRUE(p.empty());
  try {
    parse("ClusterName=x\n\nPartitionName=x MaxNodes=many\n");
    FAIL() << "accepted MaxNodes=many";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("slurm.conf:3: 'PartitionName=x MaxNodes=many': MaxNodes", 0), 0u)
        << e.what();
  }
  try {
    parse("ClusterName=x\nInclude missing.conf\n");
    FAIL() << "a missing Include";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "slurm.conf:2: 'Include missing.conf': no file /etc/slurm/missing.conf");
  }
}

TEST(SlurmPartitions, AJobRunsOnItsPartitionsNodesWithinTheirMaxNodes) {
  const auto p = parse(
      "PartitionName=gpu Nodes=ALL Default=YES\n"
      "PartitionName=old Nodes=v100-[1-2] MaxNodes=1\n"
      "PartitionName=mid Nodes=a100-1,v100-2 MaxNodes=3\n");
  const auto old = partition_bounds(p, "old");
  ASSERT_TRUE(old);
  EXPECT_TRUE(old->holds("v100-1"));
  EXPECT_FALSE(old->holds("a100-1"));
  EXPECT_EQ(old->max_nodes, 1);
  // -p old,mid: the union of their nodes, the larger MaxNodes.
  const auto both = partition_bounds(p, "old,mid");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->names, "old,mid");
  EXPECT_EQ(both->nodes, (std::vector<std::string>{"a100-1", "v100-1", "v100-2"}));
  EXPECT_EQ(both->max_nodes, 3);
  // No -p: the default partition, every node, no limit; with an unlimited one, none.
  const auto none = partition_bounds(p, "");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->names, "gpu");
  EXPECT_TRUE(none->holds("anything"));
  EXPECT_EQ(partition_bounds(p, "gpu,old")->max_nodes, 0);
  // A partition slurm.conf does not define: nothing known.
  EXPECT_FALSE(partition_bounds(p, "new"));
  EXPECT_FALSE(partition_bounds(parse("PartitionName=x Nodes=ALL\n"), ""));  // no default
}

// Slurm runs a job of several partitions in one of them: of each GPU type, the most nodes
// one of them holds bounds it, where none holds them all; a type they lack bounds it at 0.
TEST(SlurmPartitions, AJobHasAtMostTheNodesOfATypeThatOneOfItsPartitionsHolds) {
  const MorphConfig config = parse_morph_conf(
      "GpuType=a100-80g MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24\n"
      "GpuType=v100-32g MemoryGiB=32 Speed=0.4 PeakTflops=125 Link=nvlink LinkBandwidthGBps=130 PcieBandwidthGBps=12\n"
      "NodeType=a Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25\n"
      "NodeType=v Gpu=v100-32g Gpus=4 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=12.5\n"
      "NodeName=a100-[1-3] NodeType=a\nNodeName=v100-[1-2] NodeType=v\n",
      "test.conf");
  const auto p = parse(
      "PartitionName=gpu Nodes=ALL Default=YES\n"
      "PartitionName=two Nodes=a100-[1-2],v100-[1-2]\n"
      "PartitionName=one Nodes=a100-3\n");
  using Most = std::map<std::string, int>;
  EXPECT_EQ(most_nodes_by_gpu_type(config.cluster, p, ""), Most{});
  EXPECT_EQ(most_nodes_by_gpu_type(config.cluster, p, "two"), (Most{{"a100-80g", 2}}));
  EXPECT_EQ(most_nodes_by_gpu_type(config.cluster, p, "one"), (Most{{"a100-80g", 1}, {"v100-32g", 0}}));
  // Together they hold all three A100 nodes, but a job runs in one: two at most.
  EXPECT_EQ(most_nodes_by_gpu_type(config.cluster, p, "one,two"), (Most{{"a100-80g", 2}}));
  EXPECT_EQ(most_nodes_by_gpu_type(config.cluster, p, "one,gpu"), Most{});
  EXPECT_EQ(most_nodes_by_gpu_type(config.cluster, p, "new"), Most{});  // unknown: bounds nothing
  // Each partition's MaxNodes bounds what a job may have of its nodes.
  const auto capped = parse("PartitionName=one Nodes=a100-[1-3],v100-1 MaxNodes=1\n"
                            "PartitionName=two Nodes=v100-[1-2] MaxNodes=2\n");
  EXPECT_EQ(most_nodes_by_gpu_type(config.cluster, capped, "one"), (Most{{"a100-80g", 1}, {"v100-32g", 1}}));
  EXPECT_EQ(most_nodes_by_gpu_type(config.cluster, capped, "one,two"), (Most{{"a100-80g", 1}}));
  const auto bounds = partition_bounds(capped, "one,two");
  ASSERT_TRUE(bounds);
  ASSERT_EQ(bounds->each.size(), 2u);
  EXPECT_EQ(bounds->each[1].names, "two");
  EXPECT_EQ(bounds->most_nodes(config.cluster.nodes(), [](const NodeRecord&) { return true; }), 2);
  EXPECT_TRUE(partition_bounds(capped, "two")->each.empty());
}

}  // namespace
}  // namespace morph
