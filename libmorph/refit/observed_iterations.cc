#include "libmorph/refit/observed_iterations.h"

#include <fmt/format.h>

#include "libmorph/request/limits.h"
#include "libmorph/util/csv.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph {
namespace {

constexpr const char* kRequiredColumns[] = {"plan", "gpus", "iter_ms"};
constexpr const char* kCpusColumn = "cpus_per_gpu";

void check_header(const CsvTable& table) {
  const std::vector<std::string>& header = table.header();
  for (std::size_t i = 0; i < header.size(); ++i) {
    bool known = header[i] == kCpusColumn;
    for (const char* name : kRequiredColumns) known = known || header[i] == name;
    if (!known)
      throw Error(fmt::format("{}:1: unknown column {} (expected plan,gpus,iter_ms[,{}])", table.source(),
                              quote(header[i]), kCpusColumn));
    for (std::size_t j = 0; j < i; ++j)
      if (header[j] == header[i]) throw Error(fmt::format("{}:1: column {} given twice", table.source(), header[i]));
  }
  for (const char* name : kRequiredColumns)
    if (!table.has_column(name))
      throw Error(fmt::format("{}:1: missing column {} (expected plan,gpus,iter_ms[,{}])", table.source(), name,
                              kCpusColumn));
}

}  // namespace

std::vector<ObservedIteration> parse_observed_iterations(std::string_view text, const std::string& source,
                                                         const Cluster& cluster, std::int64_t global_batch) {
  const CsvTable table = CsvTable::parse(text, source);
  check_header(table);
  if (table.rows() == 0) throw Error(fmt::format("{}: no observed iterations (only a header)", source));
  const bool with_cpus = table.has_column(kCpusColumn);
  std::vector<ObservedIteration> observed;
  for (std::size_t row = 0; row < table.rows(); ++row) {
    const std::string where = table.where(row);
    ObservedIteration o;
    o.source = where;
    o.plan = parse_plan(table.text(row, "plan"), fmt::format("{}: column plan", where));
    int cpus_per_gpu = 0;
    if (with_cpus && !table.text(row, kCpusColumn).empty())
      cpus_per_gpu = static_cast<int>(table.integer(row, kCpusColumn, 1, MORPH_MAX_CPUS_PER_GPU));
    o.allocation =
        parse_gpus_spec(table.text(row, "gpus"), cluster, fmt::format("{}: column gpus", where), cpus_per_gpu);
    if (o.allocation.gpus() != o.plan.gpus())
      throw Error(fmt::format("{}: column gpus: {} is {} GPUs, the plan uses dp*tp*pp = {}", where,
                              quote(table.text(row, "gpus")), o.allocation.gpus(), o.plan.gpus()));
    if (global_batch > 0 && o.plan.global_batch() != global_batch)
      throw Error(fmt::format("{}: column plan: the plan trains a global batch of {} (dp*ga*mb*mbs), "
                              "not the workload's {}",
                              where, o.plan.global_batch(), global_batch));
    o.iter_ms = table.number(row, "iter_ms", 0, MORPH_MAX_ITER_MS);
    if (!(o.iter_ms > 0))
      throw Error(fmt::format("{}: column iter_ms: must be > 0, not {}", where, table.text(row, "iter_ms")));
    observed.push_back(std::move(o));
  }
  return observed;
}

std::vector<ObservedIteration> read_observed_iterations(const std::string& path, std::string_view what,
                                                        const Cluster& cluster, std::int64_t global_batch) {
  return parse_observed_iterations(read_text_file(path, what), path, cluster, global_batch);
}

}  // namespace morph
