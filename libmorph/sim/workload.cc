#include "libmorph/sim/workload.h"

#include <set>

#include <fmt/format.h>

#include "libmorph/util/csv.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::sim {

std::vector<TraceJob> read_workload(const std::string& path) {
  const CsvTable table = CsvTable::read_file(path);
  if (table.rows() == 0) throw Error(fmt::format("{}: no jobs", path));
  const bool tenants = table.has_column("tenant");
  const bool partitions = table.has_column("partition");
  std::vector<TraceJob> jobs;
  std::set<std::string> names;
  for (std::size_t i = 0; i < table.rows(); ++i) {
    TraceJob j;
    j.where = table.where(i);
    j.name = std::string(table.text(i, "name"));
    if (j.name.empty()) throw Error(fmt::format("{}: empty job name", j.where));
    if (!names.insert(j.name).second) throw Error(fmt::format("{}: job {} appears twice", j.where, quote(j.name)));
    j.submit_s = table.number(i, "submission_time", 0, 1e9);
    j.duration_s = table.number(i, "duration", 0, 1e9);
    j.app = std::string(table.text(i, "application"));
    if (j.app.empty()) throw Error(fmt::format("{}: empty application", j.where));
    j.gpus = static_cast<int>(table.integer(i, "num_gpus", 1, 1 << 20));
    j.cpus = static_cast<int>(table.integer(i, "num_cpus", 0, 1 << 24));
    table.number(i, "bandwidth", 0, 1e6);
    j.exec_plan = std::string(table.text(i, "exec_plan"));
    if (j.exec_plan.empty()) throw Error(fmt::format("{}: empty exec_plan", j.where));
    j.steps = table.number(i, "steps", 1, 1e12);
    j.guaranteed = table.integer(i, "is_sla", 0, 1) == 1;
    if (tenants) {
      j.tenant = std::string(table.text(i, "tenant"));
      if (j.tenant.empty()) throw Error(fmt::format("{}: empty tenant", j.where));
    }
    if (partitions) j.partition = std::string(table.text(i, "partition"));
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace morph::sim
