// morphd's libslurm side: what it reads of the cluster each round, and the SlurmOps it
// takes on jobs. Reads pass slurmctld's last update times, so that an idle cluster costs
// one small RPC per poll (SLURM_NO_CHANGE_IN_DATA).
#pragma once

#include <ctime>
#include <optional>
#include <string>

#include "daemon/cluster_snapshot.h"
#include "daemon/slurm_ops.h"

namespace morph::daemon {

class SlurmClient : public SlurmOps {
 public:
  SlurmClient();
  ~SlurmClient() override;
  SlurmClient(const SlurmClient&) = delete;
  SlurmClient& operator=(const SlurmClient&) = delete;

  // Nodes and jobs now; nullopt with `error` when slurmctld does not answer. `changed`
  // says whether anything changed since the previous read.
  std::optional<ClusterSnapshot> snapshot(bool* changed, std::string* error);
  // SlurmUser's uid (slurm.conf), for the check of who may run morphd.
  static std::optional<unsigned> slurm_user_id();
  // slurm.conf's RequeueExit as slurmctld has it ("" when unset); nullopt: no answer.
  static std::optional<std::string> requeue_exit();

  std::optional<SlurmJob> job(std::uint32_t id, bool* gone) override;
  std::string set_record(std::uint32_t id, const std::string& admin_comment, bool pending) override;
  std::string signal_batch(std::uint32_t id, int signal) override;
  std::string requeue_hold(std::uint32_t id) override;
  std::string hold(std::uint32_t id) override;
  std::string release(std::uint32_t id) override;

 private:
  // AccountingStorageType=accounting_storage/none (false while slurmctld does not answer).
  bool without_accounting();
  // Sets SlurmJob::driver of `s`'s jobs; true when one is marked for the first time.
  bool mark_drivers(ClusterSnapshot& s);

  struct Messages;
  Messages* messages_;  // the last node and job messages, kept for update times
};

}  // namespace morph::daemon
