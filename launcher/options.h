// morphrun's command line (morphrun(1)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace morph::launcher {

struct Options {
  std::vector<std::string> command;  // after "--"
  std::string framework;             // "": the record's framework, else torch
  std::string frameworks_dir;        // "": $MORPH_FRAMEWORKS or the installed share/frameworks
  std::string plan;                  // --plan: outside a Morph job
  std::int64_t seq = 0;              // --seq: the sequence length with --plan (0: none)
  std::vector<std::string> hosts;    // --hosts: outside Slurm
  int node_rank = 0;
  bool per_node = false;
  std::string checkpoint_dir;
  std::string metrics_file;          // "": $SLURM_SUBMIT_DIR/morph-<job>.metrics inside a job, none outside
  std::string config_path;           // "": $MORPH_CONF or the installed morph.conf (absent: defaults)
  bool mpi_trainer = false;          // the trainer itself joins the step's MPI world (PMIx)
  bool driver = false;
  std::string srun_mpi = "pmix";     // --driver: srun --mpi=TYPE ("none": not given)
  int threads = 0;                   // reshard threads (0: one per core)

  // One-line reason when the options contradict each other, else "".
  std::string invalid() const;
};

}  // namespace morph::launcher
