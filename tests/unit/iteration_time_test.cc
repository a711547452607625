// Every term of the Morphling appendix model on small cases computed by hand in the
// comments (times in ms).
#include "libmorph/perf/iteration_time.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_support.h"

namespace morph {
namespace {

// l=2, h=1000, s=100, P=1e8, global batch 8; forward 10 ms per sample on a speed-1 GPU.
Workload workload() { return Workload{ModelSpec{"m", 2, 1000, 10, 100, 0, 1e8}, 8, 100}; }
const ForwardModel kForward{0, 10, 1};
// k_bwd=2, k_sync=1, k_opt=0.1, k_opt_off=2, k_off=1, k_swap=1, k_const=5; bandwidth factors 1,
// k_opt_model=0.25
const PerfParams kParams{2, 1, 0.1, 2, 1, 1, 5};

ExecutionPlan plan(int dp, int tp, int pp, int ga, int mb, int mbs) { return test::make_plan(dp, tp, pp, ga, mb, mbs); }

TEST(IterationTime, DataParallelWithAccumulation) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  const IterationTerms x = iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), a, kForward);
  EXPECT_DOUBLE_EQ(x.forward_ms, 20);  // 8/4 samples * 10 ms
  EXPECT_EQ(x.ga_steps, 2);
  EXPECT_DOUBLE_EQ(x.dp_ms, 3);        // 2 B * 1e8 * 2*3/4 / 100 GB/s
  EXPECT_DOUBLE_EQ(x.tp_ms, 0);
  EXPECT_DOUBLE_EQ(x.opt_mparams, 100);
  const IterationTime<double> t = predict_iteration(x, kParams);
  EXPECT_DOUBLE_EQ(t.backward_ms, 20);  // k_bwd * 20/2
  EXPECT_DOUBLE_EQ(t.cc_ms, 63);        // 20 + (2-1)*20 + (20 + 3)
  EXPECT_DOUBLE_EQ(t.oo_ms, 10);        // 0.1 * 100
  EXPECT_DOUBLE_EQ(t.iter_ms, 78);      // 63 + 10 + 5
  PerfParams overlapped = kParams;
  overlapped.k_sync = 2;                // f = sqrt(20^2 + 3^2)
  EXPECT_NEAR(predict_iteration(x, overlapped).iter_ms, 20 + 20 + std::sqrt(409.0) + 10 + 5, 1e-12);
}

TEST(IterationTime, CheckpointingAddsOneForwardToTheBackward) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  ExecutionPlan p = plan(4, 1, 1, 2, 1, 1);
  p.checkpointing = true;
  const IterationTime<double> t = predict_iteration(iteration_terms(workload(), p, a, kForward), kParams);
  EXPECT_DOUBLE_EQ(t.backward_ms, 30);  // (2 + 1) * 10
  EXPECT_DOUBLE_EQ(t.iter_ms, 20 + 30 + 33 + 10 + 5);
}

TEST(IterationTime, TensorAndPipelineParallel) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  const ExecutionPlan p = plan(1, 2, 2, 1, 4, 2);
  EXPECT_DOUBLE_EQ(critical_path_samples(8, p), 2.5);  // 8/(2*2) * (4+2-1)/4
  const IterationTerms x = iteration_terms(workload(), p, a, kForward);
  EXPECT_DOUBLE_EQ(x.forward_ms, 25);
  EXPECT_DOUBLE_EQ(x.dp_ms, 0);
  EXPECT_DOUBLE_EQ(x.tp_ms, 0.128);  // 2 B * 8*(2-1) * 8*100*1000*2 / 2 / 100 GB/s
  EXPECT_DOUBLE_EQ(x.pp_ms, 0.032);  // Morphling A.1: 2 B * 2*2 * 8*100*1000 / 2 / 100 GB/s
  EXPECT_DOUBLE_EQ(x.opt_mparams, 25);
  const IterationTime<double> t = predict_iteration(x, kParams);
  EXPECT_DOUBLE_EQ(t.cc_ms, 25 + 50 + 0.128 + 0.032);
  EXPECT_DOUBLE_EQ(t.iter_ms, 75.16 + 2.5 + 5);
}

TEST(IterationTime, AStageTransferAcrossNodesDoesNotShrinkWithItsSplit) {
  // V_pp = 2 B * 2*2 * 8*100*1000 / (d t) = 6.4 MB / (d t); the d t chains of a stage
  // cross at once and share the NICs of their GPUs (one NIC, 10 GB/s, for 1 or 2 GPUs).
  const Allocation one_gpu = parse_gpus_spec("2x1xbig", test::test_cluster(), "--gpus");
  const Allocation two_gpus = parse_gpus_spec("2x2xbig", test::test_cluster(), "--gpus");
  const IterationTerms alone = iteration_terms(workload(), plan(1, 1, 2, 1, 4, 2), one_gpu, kForward);
  EXPECT_TRUE(alone.pp_net);
  EXPECT_DOUBLE_EQ(alone.pp_ms, 0.64);  // 6.4 MB / 10 GB/s
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(1, 2, 2, 1, 4, 2), two_gpus, kForward).pp_ms, 0.64);  // 3.2 MB / 5 GB/s
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(2, 1, 2, 1, 4, 1), two_gpus, kForward).pp_ms, 0.64);
}

TEST(IterationTime, PipelineOverlapAndModelParallelForwardAreFitted) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  const ExecutionPlan p = plan(1, 2, 2, 1, 4, 2);
  EXPECT_DOUBLE_EQ(unpipelined_path_samples(8, p), 4);  // 8/2: each micro-batch passes both stages alone
  const IterationTerms x = iteration_terms(workload(), p, a, kForward);
  EXPECT_TRUE(x.model_parallel);
  EXPECT_DOUBLE_EQ(x.unpipelined_forward_ms, 40);
  PerfParams k = kParams;
  k.k_pipe = 0.5;  // half of 1F1B's overlap: 0.5 * 25 + 0.5 * 40
  IterationTime<double> t = predict_iteration(x, k);
  EXPECT_DOUBLE_EQ(t.forward_ms, 32.5);
  EXPECT_DOUBLE_EQ(t.cc_ms, 32.5 + 65 + 0.16);  // the backward is k_bwd times the realised forward
  k.k_fwd_mp = 2;  // model-parallel kernels twice as slow as the profile's
  t = predict_iteration(x, k);
  EXPECT_DOUBLE_EQ(t.forward_ms, 65);
  EXPECT_DOUBLE_EQ(t.iter_ms, 65 + 130 + 0.16 + 2.5 + 5);
  // Without micro-batches in flight, or without model parallelism, neither applies.
  const IterationTerms one_micro_batch = iteration_terms(workload(), plan(1, 2, 2, 1, 1, 8), a, kForward);
  EXPECT_DOUBLE_EQ(one_micro_batch.unpipelined_forward_ms, one_micro_batch.forward_ms);
  k.k_fwd_mp = 1;
  EXPECT_DOUBLE_EQ(predict_iteration(one_micro_batch, k).forward_ms, 40);
  const IterationTerms dp = iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), a, kForward);
  EXPECT_FALSE(dp.model_parallel);
  k.k_fwd_mp = 3;
  EXPECT_DOUBLE_EQ(predict_iteration(dp, k).iter_ms, 78);
}

TEST(IterationTime, APipelinePaysItsStageCostPerPassOnTheCriticalPath) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  // 1F1B, 4 micro-batches over 2 stages: 4 + 2 - 1 = 5 passes on the critical path.
  const IterationTerms x = iteration_terms(workload(), plan(1, 2, 2, 1, 4, 2), a, kForward);
  EXPECT_DOUBLE_EQ(x.stage_passes, 5);
  PerfParams k = kParams;
  k.k_stage_ms = 3;
  const IterationTime<double> t = predict_iteration(x, k);
  EXPECT_DOUBLE_EQ(t.cc_ms, 25 + 50 + 0.16 + 15);  // TensorAndPipelineParallel's, + 3 ms * 5
  EXPECT_DOUBLE_EQ(t.iter_ms, 90.16 + 2.5 + 5);
  // One micro-batch in one flush: 1 + 2 - 1 = 2 passes.
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(1, 2, 2, 1, 1, 8), a, kForward).stage_passes, 2);
  // Without a pipeline there is no stage to pass: TP alone and DP pay nothing.
  const IterationTerms tp = iteration_terms(workload(), plan(1, 4, 1, 1, 1, 8), a, kForward);
  EXPECT_DOUBLE_EQ(tp.stage_passes, 0);
  EXPECT_DOUBLE_EQ(predict_iteration(tp, k).iter_ms, predict_iteration(tp, kParams).iter_ms);
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), a, kForward).stage_passes, 0);
}

TEST(IterationTime, APipelineRunsAllAccumulationStepsInOneFlush) {
  // Megatron-LM and DeepSpeed's pipeline engine run a step's a m micro-batches in one
  // 1F1B flush: the bubble (p - 1) / (a m + p - 1) is paid once, not a times.
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  EXPECT_DOUBLE_EQ(critical_path_samples(8, plan(1, 2, 2, 2, 2, 2)), 2.5);  // 8/(2*2) * (4+2-1)/4, not 8/4 * 3/2
  EXPECT_DOUBLE_EQ(critical_path_samples(8, plan(1, 1, 4, 2, 2, 2)), 3.5);  // 8/4 * (4+4-1)/4, not 8/4 * 5/2
  EXPECT_DOUBLE_EQ(critical_path_samples(8, plan(1, 2, 2, 4, 1, 2)), 2.5);  // 8/(2*2) * (4+2-1)/4, not 8/4 * 2/1
  const IterationTime<double> one_flush =
      predict_iteration(iteration_terms(workload(), plan(1, 2, 2, 1, 4, 2), a, kForward), kParams);
  for (const auto& [ga, mb] : {std::pair{2, 2}, {4, 1}}) {
    const IterationTerms x = iteration_terms(workload(), plan(1, 2, 2, ga, mb, 2), a, kForward);
    EXPECT_DOUBLE_EQ(x.forward_ms, 25) << "ga " << ga;         // 2.5 samples * 10 ms
    EXPECT_DOUBLE_EQ(x.unpipelined_forward_ms, 40) << "ga " << ga;  // 8/2 samples * 10 ms
    EXPECT_DOUBLE_EQ(x.stage_passes, 5) << "ga " << ga;        // 4 + 2 - 1 slots, once
    EXPECT_EQ(x.ga_steps, 1) << "ga " << ga;                   // the flush is the one pass
    const IterationTime<double> t = predict_iteration(x, kParams);
    EXPECT_DOUBLE_EQ(t.cc_ms, 25 + 50 + 0.16) << "ga " << ga;  // TensorAndPipelineParallel's
    EXPECT_DOUBLE_EQ(t.iter_ms, one_flush.iter_ms) << "ga " << ga;
  }
}

TEST(IterationTime, ZeroOffload) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");  // 32 CPUs, 8 per GPU
  ExecutionPlan p = plan(4, 1, 1, 2, 1, 1);
  p.zero_stage = 2;
  p.offload = true;
  const IterationTerms x = iteration_terms(workload(), p, a, kForward);
  EXPECT_DOUBLE_EQ(x.opt_off_mparams_per_cpu, 3.125);  // 100 / (4 * 8)
  EXPECT_DOUBLE_EQ(x.off_ms, 20);                      // 4 B * 1e8/4 / min(10, 20/4) GB/s
  // ZeRO-2 splits the all-reduce (3 ms): reduce-scatter in the backward, all-gather after
  EXPECT_DOUBLE_EQ(x.dp_ms, 1.5);
  EXPECT_DOUBLE_EQ(x.gather_ms, 1.5);
  const IterationTime<double> t = predict_iteration(x, kParams);
  // k_off = 1: the last backward (20) plus the reduce-scatter (1.5) plus half of T_off (10)
  EXPECT_DOUBLE_EQ(t.cc_ms, 20 + 20 + (20 + 1.5 + 10));
  EXPECT_DOUBLE_EQ(x.model_mparams, 100);
  EXPECT_DOUBLE_EQ(t.opt_ms, 6.25 + 25);           // k_opt_off P/(d c) + k_opt_model P (0.25 * 100)
  EXPECT_DOUBLE_EQ(t.oo_ms, (31.25 + 10) + 1.5);  // k_swap = 1: T_opt + T_off/2, then the gather
  EXPECT_DOUBLE_EQ(t.iter_ms, 71.5 + 42.75 + 5);
  PerfParams with_overhead = kParams;
  with_overhead.k_const_off = 7;  // offloading's own constant, on top of k_const
  EXPECT_DOUBLE_EQ(predict_iteration(x, with_overhead).iter_ms, 71.5 + 42.75 + 5 + 7);
  const IterationTerms dp = iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), a, kForward);
  EXPECT_DOUBLE_EQ(predict_iteration(dp, with_overhead).iter_ms, predict_iteration(dp, kParams).iter_ms);
}

TEST(IterationTime, ZeroDataParallelGathersTheUpdatedParameters) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  ExecutionPlan p = plan(4, 1, 1, 2, 1, 1);
  p.zero_stage = 1;
  const IterationTime<double> t = predict_iteration(iteration_terms(workload(), p, a, kForward), kParams);
  EXPECT_DOUBLE_EQ(t.cc_ms, 20 + 20 + (20 + 1.5));  // the reduce-scatter, half of 3 ms
  EXPECT_DOUBLE_EQ(t.oo_ms, 0.1 * 25 + 1.5);        // k_opt P/d, then the all-gather
  EXPECT_DOUBLE_EQ(t.iter_ms, 61.5 + 4 + 5);
}

TEST(IterationTime, ZerosLastGradientBucketFollowsTheBackwardPass) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  ExecutionPlan zero = plan(4, 1, 1, 2, 1, 1);
  zero.zero_stage = 2;
  // P = 1e8 fits one 2e8-element bucket: nothing is reduced before the backward ends.
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), zero, a, kForward).tail_share, 1);
  // P = 8e8: the last of four buckets, a quarter (T_dp = 2 B * 8e8 * 2*3/4 / 100 GB/s / 2 = 12).
  Workload big = workload();
  big.model.params = 8e8;
  const IterationTerms x = iteration_terms(big, zero, a, kForward);
  EXPECT_DOUBLE_EQ(x.tail_share, 0.25);
  EXPECT_DOUBLE_EQ(x.dp_ms, 12);
  PerfParams k = kParams;
  k.k_sync = 2;  // f = sqrt(20^2 + 9^2): three buckets under the last backward, then 3 ms
  const IterationTime<double> t = predict_iteration(x, k);
  EXPECT_NEAR(t.cc_ms, 20 + 20 + (std::sqrt(481.0) + 3), 1e-12);
  // ZeRO-Offload's buckets carry the gradients to the host as well: T_dp + T_off/2.
  ExecutionPlan off = zero;
  off.offload = true;
  const IterationTerms y = iteration_terms(big, off, a, kForward);
  EXPECT_DOUBLE_EQ(y.tail_share, 0.25);
  EXPECT_DOUBLE_EQ(y.off_ms, 160);  // 4 B * 8e8/4 / 5 GB/s
  k.k_off = 2;                      // (12 + 80): 69 under the backward, 23 after it
  EXPECT_NEAR(predict_iteration(y, k).cc_ms, 20 + 20 + (std::sqrt(400.0 + 69 * 69) + 23), 1e-12);
  // No bucket of its own: plain data parallelism and ZeRO-3 overlap all of it.
  EXPECT_DOUBLE_EQ(iteration_terms(big, plan(4, 1, 1, 2, 1, 1), a, kForward).tail_share, 0);
  zero.zero_stage = 3;
  EXPECT_DOUBLE_EQ(iteration_terms(big, zero, a, kForward).tail_share, 0);
  // Per replica the gradient is P/(t p): TP 2 halves it, so the last bucket is half of it.
  ExecutionPlan tp = plan(2, 2, 1, 2, 1, 1);
  tp.zero_stage = 1;
  EXPECT_DOUBLE_EQ(iteration_terms(big, tp, a, kForward).tail_share, 0.5);
}

TEST(IterationTime, MorphsFrameworkConfigurationsUseTheModelsBuckets) {
  const nlohmann::json f = nlohmann::json::parse(std::ifstream(test::source_dir() + "/share/frameworks/deepspeed.json"));
  const nlohmann::json& zero = f.at("config_file").at("content").at("zero_optimization");
  EXPECT_TRUE(zero.at("overlap_comm").get<bool>());
  EXPECT_DOUBLE_EQ(zero.at("reduce_bucket_size").get<double>(), kZeroBucketElements);
  // Megatron's distributed optimizer (ZeRO-1) reduces in buckets of the same size.
  const nlohmann::json m = nlohmann::json::parse(std::ifstream(test::source_dir() + "/share/frameworks/megatron.json"));
  int bucket_rules = 0;
  for (const nlohmann::json& rule : m.at("args")) {
    const auto args = rule.at("add").get<std::vector<std::string>>();
    const auto flag = std::find(args.begin(), args.end(), "--ddp-bucket-size");
    if (flag == args.end()) continue;
    ++bucket_rules;
    EXPECT_EQ(rule.at("when").get<std::string>(), "zero==1");
    ASSERT_NE(flag + 1, args.end());
    EXPECT_DOUBLE_EQ(std::stod(*(flag + 1)), kZeroBucketElements);
    EXPECT_NE(std::find(args.begin(), args.end(), "--use-distributed-optimizer"), args.end());
  }
  EXPECT_EQ(bucket_rules, 1);
}

TEST(IterationTime, FittedBandwidthFactorsScaleTheirTransfers) {
  PerfParams k = kParams;
  k.k_dp = 2;
  k.k_mp = 3;
  k.k_pcie = 0.5;
  k.k_net = 4;
  const Allocation one = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  // DP in one node: T_dp = 2 * 3
  EXPECT_DOUBLE_EQ(predict_iteration(iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), one, kForward), k).iter_ms,
                   20 + 20 + (20 + 6) + 10 + 5);
  // across nodes the network factor replaces k_dp: T_dp = 4 * 30
  const Allocation two = parse_gpus_spec("2x2xbig", test::test_cluster(), "--gpus");
  const IterationTerms cross = iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), two, kForward);
  EXPECT_TRUE(cross.dp_net);
  EXPECT_DOUBLE_EQ(predict_iteration(cross, k).iter_ms, 20 + 20 + (20 + 120) + 10 + 5);
  // TP and PP: k_mp (0.128 + 0.032)
  const IterationTerms mp = iteration_terms(workload(), plan(1, 2, 2, 1, 4, 2), one, kForward);
  EXPECT_FALSE(mp.tp_net);
  EXPECT_NEAR(predict_iteration(mp, k).cc_ms, 25 + 50 + 3 * 0.16, 1e-12);
  // offloading: k_pcie halves T_off = 20
  ExecutionPlan off = plan(4, 1, 1, 2, 1, 1);
  off.zero_stage = 2;
  off.offload = true;
  const IterationTime<double> t = predict_iteration(iteration_terms(workload(), off, one, kForward), k);
  EXPECT_DOUBLE_EQ(t.cc_ms, 20 + 20 + (20 + 3 + 5));  // k_dp * 1.5 + k_pcie * 20 / 2
  EXPECT_DOUBLE_EQ(t.oo_ms, (31.25 + 5) + 3);         // gather: k_dp * 1.5
}

TEST(IterationTime, CrossNodeDataParallelUsesTheNetworkShare) {
  const Allocation a = parse_gpus_spec("2x2xbig", test::test_cluster(), "--gpus");
  const IterationTerms x = iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), a, kForward);
  EXPECT_DOUBLE_EQ(x.dp_ms, 30);  // 3e8 B over one 10 GB/s NIC
}

TEST(IterationTime, OddPlacementsAreThoseWithAnOddNodeNotAllOnes) {
  const Cluster& c = test::test_cluster();
  EXPECT_TRUE(has_odd_placement(parse_gpus_spec("3xbig+5xbig", c, "--gpus")));
  EXPECT_TRUE(has_odd_placement(parse_gpus_spec("1xbig+1xbig+2xbig", c, "--gpus")));
  EXPECT_TRUE(has_odd_placement(parse_gpus_spec("2xbig+3xbig+3xbig", c, "--gpus")));
  EXPECT_FALSE(has_odd_placement(parse_gpus_spec("2x4xbig", c, "--gpus")));
  EXPECT_FALSE(has_odd_placement(parse_gpus_spec("2xbig+6xbig", c, "--gpus")));
  EXPECT_FALSE(has_odd_placement(parse_gpus_spec("4x1xbig", c, "--gpus")));  // one GPU on every node
  EXPECT_FALSE(has_odd_placement(parse_gpus_spec("3xbig", c, "--gpus")));    // one node
}

TEST(IterationTime, OneGpuOnEveryNodeStallsByTheNodeRingOverTwoNodes) {
  const Cluster& c = test::test_cluster();
  EXPECT_DOUBLE_EQ(placement_stall_factor(parse_gpus_spec("2x1xbig", c, "--gpus")), 0);    // 2 (2-1)/2 - 1
  EXPECT_DOUBLE_EQ(placement_stall_factor(parse_gpus_spec("4x1xbig", c, "--gpus")), 0.5);  // 2 (4-1)/4 - 1
  EXPECT_DOUBLE_EQ(placement_stall_factor(parse_gpus_spec("8x1xbig", c, "--gpus")), 0.75);
  EXPECT_DOUBLE_EQ(placement_stall_factor(parse_gpus_spec("1xbig+3xbig", c, "--gpus")), 4.0 / 3);  // odd
  EXPECT_DOUBLE_EQ(placement_stall_factor(parse_gpus_spec("2x4xbig", c, "--gpus")), 0);
  EXPECT_DOUBLE_EQ(placement_stall_factor(parse_gpus_spec("1xbig", c, "--gpus")), 0);  // one node
  // The DP group's terms carry it; ZeRO-Offload's do not.
  const Allocation ones = parse_gpus_spec("4x1xbig", c, "--gpus");
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), ones, kForward).odd_ring, 0.5);
  ExecutionPlan offload = plan(4, 1, 1, 2, 1, 1);
  offload.zero_stage = 2;
  offload.offload = true;
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), offload, ones, kForward).odd_ring, 0);
}

TEST(IterationTime, RingFactorIsAllReduceTrafficPerMember) {
  EXPECT_DOUBLE_EQ(ring_factor(1), 0);
  EXPECT_DOUBLE_EQ(ring_factor(2), 1);
  EXPECT_DOUBLE_EQ(ring_factor(3), 4.0 / 3);
  EXPECT_DOUBLE_EQ(ring_factor(8), 1.75);
}

TEST(IterationTime, OddPlacementStallGrowsWithTheFullestNodesRing) {
  const Cluster& c = test::test_cluster();
  PerfParams k = kParams;
  k.k_odd_ms = 40;
  const Allocation odd = parse_gpus_spec("1xbig+3xbig", c, "--gpus");
  const Allocation even = parse_gpus_spec("2x2xbig", c, "--gpus");
  const IterationTerms x_odd = iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), odd, kForward);
  const IterationTerms x_even = iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), even, kForward);
  EXPECT_DOUBLE_EQ(x_odd.odd_ring, 4.0 / 3);  // 3 GPUs on the fullest node: 2 (3-1) / 3
  EXPECT_DOUBLE_EQ(x_even.odd_ring, 0);
  const Allocation wide = parse_gpus_spec("1xbig+1xbig+2xbig", c, "--gpus");
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), wide, kForward).odd_ring, 1);
  // The same terms but the factor: the stall adds exactly k_odd times it.
  IterationTerms x_flagged = x_even;
  x_flagged.odd_ring = 1.5;
  EXPECT_DOUBLE_EQ(predict_iteration(x_flagged, k).iter_ms, predict_iteration(x_even, k).iter_ms + 60);
  EXPECT_DOUBLE_EQ(predict_iteration(x_even, k).iter_ms, predict_iteration(x_even, kParams).iter_ms);
  // Not without DP across the nodes (PP across them), nor for ZeRO-Offload.
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(1, 1, 4, 1, 4, 2), odd, kForward).odd_ring, 0);
  ExecutionPlan offload = plan(4, 1, 1, 2, 1, 1);
  offload.zero_stage = 2;
  offload.offload = true;
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), offload, odd, kForward).odd_ring, 0);
}

TEST(IterationTime, SlowestGpuTypeScalesTheForwardPass) {
  const Allocation a = parse_gpus_spec("2xbig+2xsmall", test::test_cluster(), "--gpus");
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), a, kForward).forward_ms, 40);
  const ForwardModel measured_on_small{0, 10, 0.5};
  const Allocation big = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), big, measured_on_small).forward_ms, 10);
}

TEST(IterationTime, ForwardInterceptIsPerIteration) {
  const Allocation a = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  const ForwardModel affine{7, 10, 1};
  EXPECT_DOUBLE_EQ(iteration_terms(workload(), plan(4, 1, 1, 2, 1, 1), a, affine).forward_ms, 27);
}

}  // namespace
}  // namespace morph
