// Shared fixtures for morphd's tests: a small cluster in morph.conf, the catalog, and
// Morph jobs of gpt2-1.5b (batch 16) as Slurm shows them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/view_builder.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/record/job_record.h"
#include "libmorph/state/layout.h"
#include "tests/unit/test_support.h"

namespace morph::test {

using daemon::ClusterSnapshot;
using daemon::JobHistory;
using daemon::JobPhase;
using daemon::SlurmJob;
using daemon::SlurmNode;

// Two nodes of 8 a100 GPUs and one of 4 v100.
inline constexpr const char* kDaemonConf =
    R"(GpuType=a100-80g MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24
GpuType=v100-32g MemoryGiB=32 Speed=0.4 PeakTflops=125 Link=nvlink LinkBandwidthGBps=120 PcieBandwidthGBps=12
NodeType=emu-a100 Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25 Nics=2
NodeType=emu-v100 Gpu=v100-32g Gpus=4 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25 Nics=1
NodeName=a100-1 NodeType=emu-a100
NodeName=a100-2 NodeType=emu-a100
NodeName=v100-1 NodeType=emu-v100
)";

// The record of a gpt2-1.5b job (batch 16) on `gpus` GPUs of one a100 node under `plan`.
inline std::string gpt2_record(const ExecutionPlan& plan, Sla sla = Sla::best_effort) {
  JobRecord r;
  r.request.model = "gpt2-1.5b";
  r.request.global_batch = 16;
  r.request.sla = sla;
  r.request.sla_given = true;
  r.current.gpu_type = "a100-80g";
  r.current.nodes = 1;
  r.current.gpus_per_node = plan.gpus();
  r.current.cpus_per_gpu = 4;
  r.current.plan = plan;
  r.current.iter_ms = 100;
  return to_admin_comment(r);
}

inline SlurmJob running_job(std::uint32_t id, const std::string& node, const ExecutionPlan& plan, double start_s) {
  return SlurmJob{id, 1000, JobPhase::running, false, gpt2_record(plan), {node}, 100, start_s, 0, 0};
}

inline SlurmJob pending_job(std::uint32_t id, const ExecutionPlan& plan) {
  return SlurmJob{id, 1000, JobPhase::pending, false, gpt2_record(plan), {}, 100, 0, 0, 0};
}

// Iterations of `seconds` each, reported one a second from `from_s` under `plan`.
inline void report(JobHistory& h, std::uint32_t job, double from_s, const ExecutionPlan& plan, double seconds,
                   int count) {
  for (int i = 0; i < count; ++i)
    h.observations.push_back({job, static_cast<std::int64_t>(from_s) + i, i, seconds, 16,
                              state::to_string(state::layout_of(plan))});
}

class DaemonFixture : public ::testing::Test {
 protected:
  DaemonFixture()
      : config_(parse_morph_conf(kDaemonConf, "test.conf")),
        catalog_(Catalog::load_file(source_dir() + "/share/models.json")),
        context_{config_, catalog_, perf_} {}

  // The nodes as Slurm shows them with `jobs` running.
  static ClusterSnapshot snapshot(std::vector<SlurmJob> jobs) {
    ClusterSnapshot s;
    s.now_s = 1000;
    s.nodes = {{"a100-1", true, 0}, {"a100-2", true, 0}, {"v100-1", true, 0}};
    for (const SlurmJob& j : jobs)
      for (SlurmNode& n : s.nodes)
        if (j.phase == JobPhase::running && j.nodes.front() == n.name)
          n.gpus_in_use += parse_admin_comment(j.admin_comment).current.gpus_per_node;
    s.jobs = std::move(jobs);
    return s;
  }

  MorphConfig config_;
  Catalog catalog_;
  PerfStore perf_;
  daemon::ViewContext context_;
};

}  // namespace morph::test
