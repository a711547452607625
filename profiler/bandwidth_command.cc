// morph-profile bandwidth: MPI, CUDA and NCCL bandwidths inside a node and across nodes,
// run under srun with one rank per GPU; writes the measured morph.conf records.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <mpi.h>

#include "libmorph/config/morph_conf.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "profiler/commands.h"
#include "profiler/conf_fragment.h"
#include "profiler/gpu_bandwidth.h"
#include "profiler/mpi_bandwidth.h"
#include "profiler/node_layout.h"
#include "profiler/size_sweep.h"

namespace morph::profile {
namespace {

using hw::BandwidthRow;
using hw::Collective;

struct BandwidthArgs {
  std::string sizes = "1K:64M";
  int iterations = 20;
  std::string out_path;  // empty: print the fragment
};

// What every rank knows before measuring.
struct Setup {
  hw::SweepOptions sweep;
  std::string config_path;
  MorphConfig config;
};

struct Results {
  std::vector<BandwidthRow> rows;  // complete on world rank 0
  std::string gpu_reason;          // why no GPU test ran ("" when they did)
  double pcie_GBps = 0;            // slowest rank's peak min(h2d, d2h); 0: not measured
  int compute_capability = 0;      // the lowest of every rank's GPUs; 0: not measured
};

double peak_busbw(const std::vector<BandwidthRow>& rows, const char* library, Collective c, const char* scope) {
  double best = 0;
  for (const BandwidthRow& r : rows)
    if (r.library == library && r.collective == c && r.scope == scope) best = std::max(best, r.busbw_GBps);
  return best;
}

int ranks_of(const std::vector<BandwidthRow>& rows, const char* library, Collective c, const char* scope) {
  for (const BandwidthRow& r : rows)
    if (r.library == library && r.collective == c && r.scope == scope) return r.ranks;
  return 0;
}

void append(std::vector<BandwidthRow>& rows, std::vector<BandwidthRow> more) {
  rows.insert(rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

// Phase 1: MPI over host memory (every build, every rank).
void measure_mpi(const hw::NodeLayout& layout, const hw::SweepOptions& sweep, Results& results) {
  const auto& first_node = layout.node_ranks.front();
  if (first_node.size() >= 2) append(results.rows, hw::mpi_pingpong(MPI_COMM_WORLD, first_node[0], first_node[1], sweep, "intra"));
  if (layout.node_ranks.size() >= 2)
    append(results.rows, hw::mpi_pingpong(MPI_COMM_WORLD, first_node[0], layout.node_ranks[1][0], sweep, "inter"));
  // Inside a node: on the first node only, while the others wait (the report shows one node).
  if (first_node.size() >= 2 && layout.node == 0) append(results.rows, hw::mpi_allreduce(layout.node_comm, sweep, "intra"));
  hw::quiet_barrier(MPI_COMM_WORLD);
  if (layout.node_ranks.size() >= 2 && layout.leaders_comm != MPI_COMM_NULL)
    append(results.rows, hw::mpi_allreduce(layout.leaders_comm, sweep, "inter"));
  hw::quiet_barrier(MPI_COMM_WORLD);
}

// Phase 2: whether every rank has a GPU; the GPU tests run only if all do.
int agree_on_gpus(Results& results) {
  const hw::GpuProbe probe = hw::probe_gpus();
  int fewest = probe.devices;
  MPI_Allreduce(&probe.devices, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest == 0) results.gpu_reason = probe.devices == 0 ? probe.reason : "a rank has no CUDA device";
  // A rank that could not read its GPUs' capability (0) makes it unknown for all.
  MPI_Allreduce(&probe.compute_capability, &results.compute_capability, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return fewest;
}

// Phase 3: pinned host <-> device copies on each rank's GPU; the slowest rank's peak counts.
void measure_pcie(const hw::NodeLayout& layout, int devices, const hw::SweepOptions& sweep, Results& results) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<BandwidthRow> rows = hw::cuda_pcie_bandwidth(layout.local_rank % devices, sweep);
  double h2d = 0, d2h = 0;
  for (const BandwidthRow& r : rows) {
    double& peak = r.collective == Collective::host_to_device ? h2d : d2h;
    peak = std::max(peak, r.busbw_GBps);
  }
  const double mine = std::min(h2d, d2h);
  MPI_Reduce(&mine, &results.pcie_GBps, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  if (rank == 0) append(results.rows, rows);
}

// Phase 4: NCCL collectives inside a node and across all ranks of all nodes.
void measure_nccl(const hw::NodeLayout& layout, int devices, const hw::SweepOptions& sweep, Results& results) {
  int local_size = 0;
  MPI_Comm_size(layout.node_comm, &local_size);
  const int device = layout.local_rank % devices;
  if (local_size >= 2) {
    std::vector<BandwidthRow> rows = hw::nccl_bandwidth(layout.node_comm, device, sweep, "intra");
    if (layout.node == 0) append(results.rows, std::move(rows));
  }
  if (layout.node_ranks.size() >= 2) append(results.rows, hw::nccl_bandwidth(MPI_COMM_WORLD, device, sweep, "inter"));
}

std::string table(const std::vector<BandwidthRow>& rows) {
  std::string out = fmt::format("{:<8} {:<10} {:<6} {:>5} {:>6} {:>12} {:>11} {:>11}\n", "library", "test", "scope", "ranks",
                                "size", "time_us", "algbw_GBps", "busbw_GBps");
  for (const BandwidthRow& r : rows)
    // Significant digits: a slow measurement on a loaded machine still prints as positive.
    out += fmt::format("{:<8} {:<10} {:<6} {:>5} {:>6} {:>12.2f} {:>11.4g} {:>11.4g}\n", r.library, to_string(r.collective),
                       r.scope, r.ranks, hw::size_label(r.bytes), r.time_s * 1e6, r.algbw_GBps, r.busbw_GBps);
  return out;
}

hw::MeasuredBandwidth measured_values(const Results& results, const hw::NodeLayout& layout, const hw::SweepOptions& sweep) {
  const std::string range = fmt::format("sizes {}..{}, {} iterations", hw::size_label(sweep.sizes.front()),
                                        hw::size_label(sweep.sizes.back()), sweep.iterations);
  hw::MeasuredBandwidth m;
  std::vector<std::string> reasons;
  if (!results.gpu_reason.empty()) reasons.push_back(results.gpu_reason);
  else if (!hw::nccl_built()) reasons.emplace_back("built without NCCL");
  if (double v = peak_busbw(results.rows, "NCCL", Collective::allreduce, "intra"); v > 0)
    m.intra = hw::MeasuredValue{v, fmt::format("peak NCCL allreduce busbw inside a node, {} GPUs, {}",
                                               ranks_of(results.rows, "NCCL", Collective::allreduce, "intra"), range)};
  for (const char* library : {"NCCL", "MPI"}) {
    const double v = peak_busbw(results.rows, library, Collective::allreduce, "inter");
    if (m.inter || v <= 0) continue;
    const int ranks = ranks_of(results.rows, library, Collective::allreduce, "inter");
    m.inter = hw::MeasuredValue{v, fmt::format("peak {} allreduce busbw across {} nodes ({} ranks), {}", library,
                                               layout.node_names.size(), ranks, range)};
  }
  if (layout.node_names.size() < 2) reasons.emplace_back("one node: nothing measured across nodes");
  m.compute_capability = results.compute_capability;
  if (results.pcie_GBps > 0)
    m.pcie = hw::MeasuredValue{results.pcie_GBps, fmt::format("slowest rank's peak of pinned cudaMemcpyAsync host<->device, {}", range)};
  for (const std::string& r : reasons) m.not_measured_reason += (m.not_measured_reason.empty() ? "" : "; ") + r;
  return m;
}

// Rank 0: the report and the fragment. Returns an error message, or "".
std::string report(const Results& results, const hw::NodeLayout& layout, const Setup& setup, const BandwidthArgs& args) {
  std::string nodes;
  for (std::size_t n = 0; n < layout.node_names.size(); ++n)
    nodes += fmt::format("{}{}: {}", n == 0 ? "" : ", ", layout.node_names[n], layout.node_ranks[n].size());
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::cout << fmt::format("morph-profile bandwidth: {} ranks on {} node{} ({}); {} iterations per size\n", world,
                           layout.node_names.size(), layout.node_names.size() == 1 ? "" : "s", nodes, setup.sweep.iterations);
  if (!results.gpu_reason.empty()) std::cout << "GPU: " << results.gpu_reason << "; measuring MPI only\n";
  std::cout << '\n' << table(results.rows);
  try {
    const std::string fragment =
        hw::conf_fragment(setup.config, setup.config_path, layout.node_names, measured_values(results, layout, setup.sweep));
    if (args.out_path.empty()) {
      std::cout << '\n' << fragment;
    } else {
      std::ofstream out(args.out_path);
      if (!(out << fragment) || !out.flush()) return fmt::format("--out {}: cannot write", args.out_path);
      std::cout << "\nmorph.conf records written to " << args.out_path << '\n';
    }
  } catch (const Error& e) {
    return e.what();
  }
  std::cout.flush();
  return "";
}

void run_bandwidth(const BandwidthArgs& args, const Context& context) {
  Setup setup{{hw::parse_size_sweep(args.sizes), args.iterations}, morph_conf_path(context.config_path), {}};
  setup.config = load_morph_conf(setup.config_path);
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string error;
  try {
    hw::NodeLayout layout = hw::group_ranks_by_node(MPI_COMM_WORLD);
    Results results;
    measure_mpi(layout, setup.sweep, results);
    if (const int devices = agree_on_gpus(results); devices > 0) {
      measure_pcie(layout, devices, setup.sweep, results);
      if (hw::nccl_built()) measure_nccl(layout, devices, setup.sweep, results);
    }
    if (rank == 0) error = report(results, layout, setup, args);
    hw::free_layout(layout);
  } catch (const Error& e) {
    // A failed GPU test leaves the other ranks inside a collective: stop them all.
    std::cerr << fmt::format("morph-profile: rank {}: {}\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  if (!error.empty()) throw Error(error);
}

}  // namespace

void add_bandwidth_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<BandwidthArgs>();
  command_line::Command cmd =
      app.subcommand("bandwidth", "MPI, PCIe and NCCL bandwidths inside and across nodes (under srun)");
  cmd.option("--sizes", args->sizes, "message sizes MIN:MAX, stepping x4 (default 1K:64M)");
  cmd.option("--iters", args->iterations, "timed iterations per size (default 20)").range(1, 100000);
  cmd.option("--out", args->out_path, "write the morph.conf records to FILE instead of printing them");
  cmd.on_run([args, &context] { run_bandwidth(*args, context); });
}

}  // namespace morph::profile
