#include "tools/morph/perf_source.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::cli {

ResolvedPerf resolve_perf(const std::string& perf_file, const Workload& workload, const GpuType& reference_gpu,
                          double compute_efficiency, const Catalog& catalog) {
  ResolvedPerf r;
  if (!perf_file.empty()) {
    std::string fitted_for;
    r.perf = load_perf_model(perf_file, &fitted_for);
    const ModelSpec* fitted = catalog.find(fitted_for);
    if (to_lower(fitted != nullptr ? fitted->name : fitted_for) != to_lower(workload.model.name))
      throw Error(fmt::format("--perf: {} was fitted for {}, not {}", perf_file, fitted_for, workload.model.name));
    const std::int64_t fitted_seq = r.perf.forward.seq_len;
    r.perf.forward = r.perf.forward.at_sequence(workload.model, workload.seq_len);
    r.description = fmt::format("performance model: {}{} ({})", perf_file,
                                fitted_seq > 0 && fitted_seq != workload.seq_len
                                    ? fmt::format(", fitted at sequence length {}, forward time scaled by FLOPs to {}",
                                                  fitted_seq, workload.seq_len)
                                    : "",
                                to_string(r.perf.params));
    return r;
  }
  const double efficiency = compute_efficiency;
  r.perf.forward = estimate_forward_model(workload.model, workload.seq_len, reference_gpu, efficiency);
  r.description = fmt::format(
      "performance model: no profile; forward from FLOPs at {:.0f}% of {} peak ({:.1f} ms/sample), default parameters",
      100 * efficiency, reference_gpu.name, r.perf.forward.per_sample_ms);
  return r;
}

}  // namespace morph::cli
