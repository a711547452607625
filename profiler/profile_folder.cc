#include "profiler/profile_folder.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "libmorph/artifact/artifact_rows.h"
#include "libmorph/util/error.h"

namespace morph::profile {

void write_profile_folder(const std::string& dir, const ProfileFolderInfo& info,
                          const std::vector<MeasuredConfig>& rows) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("--out: {}: {}", dir, ec.message()));
  std::ofstream config(dir + "/config.csv");
  std::ofstream data(dir + "/data.csv");
  config << "nodes,gpus,parameter_size,batch_size,seq_hid,num_cpu_threads,zero_type,is_tp,is_pp,exec_plan,node_type\n";
  data << "iter_time\n";
  for (const MeasuredConfig& r : rows) {
    const ExecutionPlan& p = r.config.plan;
    const int zero_type = p.offload ? 1 : p.zero_stage > 0 ? 2 : 0;
    // parameter_size in millions of 2^20, seq_hid = s h b, as the artifact writes them.
    config << fmt::format("{},{},{:.6f},{},{},{},{},{},{},{},{}\n", r.config.nodes, r.config.gpus(),
                          info.model.params / (1024.0 * 1024.0), info.global_batch,
                          info.seq_len * info.model.hidden * info.global_batch, info.cpus_per_gpu, zero_type,
                          p.tp > 1 ? 1 : 0, p.pp > 1 ? 1 : 0, artifact_exec_plan(p), info.node_type);
    data << fmt::format("{:.3f}\n", r.iter_ms);
  }
  if (!config || !data) throw Error(fmt::format("--out: {}: cannot write config.csv and data.csv", dir));
}

}  // namespace morph::profile
