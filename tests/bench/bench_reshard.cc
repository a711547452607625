// Resharding a ~2 GB training state (GPT-like, f32 parameters and Adam states) from
// TP 4 x PP 2 to TP 2 x PP 4 on this machine, side by side with `cp -r` of the same
// checkpoint, and central (one process, one thread) against distributed (4 MPI
// processes of morph-reshard-mpi) execution. Medians of 5 rounds, each round in
// alternating order (a disk's write-back makes whichever runs second slower). The
// folder is $MORPH_BENCH_DIR (default: the temporary folder). Last line:
//   reshard: bytes=<n> seconds=<s> gbps=<g> vs_cp=<cp seconds / reshard seconds>
//            distributed_vs_central=<central seconds / distributed seconds>
//
// `bench_reshard --plan`: planning alone (no files) for a LLaMA-7B-size state (32 layers,
// hidden 4096, vocabulary 32000) between layouts of up to 64 ranks, each case in its own
// process, with the planning seconds and that process's peak RSS (ru_maxrss): the whole
// plan (plan_reshard, as `morph reshard` held it before 4c851ea), the whole plan file
// by file as `morph reshard` makes it (FilePlanner, each file's plan dropped before the
// next is made; held_ops: the most held at once), then the share of one process of
// morph-reshard-mpi with one process per new rank. One line per case:
//   plan: <from> -> <to> ranks=<planned>/<new ranks> seconds=<s> stored_ops=<n> peak_rss_mb=<MB>
//   files: <from> -> <to> ranks=<planned>/<new ranks> seconds=<s> held_ops=<n> peak_rss_mb=<MB>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "libmorph/state/reshard_exec.h"
#include "tests/state_fixture.h"

namespace {

namespace fs = std::filesystem;
using morph::state::Layout;

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run_or_die(const std::string& command) {
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "bench_reshard: failed: %s\n", command.c_str());
    std::exit(1);
  }
}

// The headers `layout`'s files would have (offsets only; planning reads no data). The
// data-parallel ranks of a TP and PP coordinate hold tensors of the same names and shapes.
std::vector<morph::state::SafetensorsHeader> synthetic_headers(const morph::state::StateSpec& spec,
                                                               const Layout& layout) {
  std::vector<morph::state::SafetensorsHeader> out(static_cast<std::size_t>(layout.ranks()));
  for (int pp = 0; pp < layout.pp; ++pp)
    for (int tp = 0; tp < layout.tp; ++tp) {
      const morph::state::DataParallelTensors group = morph::state::data_parallel_tensors(spec, layout, tp, pp);
      std::vector<morph::state::TensorDecl> decls;
      for (const morph::state::LocalTensor& t : group.replicated) decls.push_back(t.decl);
      for (const morph::state::ZeroPartition& z : group.partitioned) decls.push_back(z.decl);
      morph::state::SafetensorsHeader h;
      h.data_offset = 4096;
      std::uint64_t at = 0;
      for (const morph::state::TensorDecl& d : decls) {
        morph::state::TensorEntry e{d.name, d.dtype, d.shape, at, at};
        e.end = at + e.elements() * morph::state::dtype_bytes(d.dtype);
        at = e.end;
        h.tensors.push_back(std::move(e));
      }
      for (int dp = 0; dp < layout.dp; ++dp)
        out[static_cast<std::size_t>(morph::state::rank_of(layout, {dp, tp, pp}))] = h;
    }
  return out;
}

// One planning case in a child process: its seconds and peak RSS. With `processes` > 1,
// the share of process 0 of morph-reshard-mpi on that many processes (new ranks r with
// r mod processes = 0); with `by_file`, every file planned on its own and dropped.
void plan_case(const morph::state::StateSpec& spec, const Layout& from, const Layout& to, int processes,
               bool by_file = false) {
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("bench_reshard: fork");
    std::exit(1);
  }
  if (child == 0) {
    const std::vector<morph::state::SafetensorsHeader> headers = synthetic_headers(spec, from);
    morph::state::ReshardPlan plan;
    std::vector<int> ranks;
    for (int r = 0; r < to.ranks(); r += processes) ranks.push_back(r);
    if (by_file) {
      std::unique_ptr<morph::state::FilePlanner> planner;  // not freed, as the whole plan is not
      const double s = seconds_of([&] {
        planner = std::make_unique<morph::state::FilePlanner>(spec, from, headers, to, morph::state::RankNodes{}, ranks);
        for (std::size_t f = 0; f < planner->file_count(); ++f) planner->plan(f);
      });
      std::printf("files: %s -> %s ranks=%zu/%d seconds=%.3f held_ops=%llu", morph::state::to_string(from).c_str(),
                  morph::state::to_string(to).c_str(), ranks.size(), to.ranks(), s,
                  static_cast<unsigned long long>(planner->most_ops_held()));
      std::fflush(stdout);
      std::_Exit(0);
    }
    const double s = seconds_of([&] { plan = morph::state::plan_reshard(spec, from, headers, to, {}, ranks); });
    std::size_t ops = 0;  // stored: replicas share theirs
    for (const auto& file : plan.files) ops += file->ops.size();
    std::printf("plan: %s -> %s ranks=%zu/%d seconds=%.3f stored_ops=%zu", morph::state::to_string(from).c_str(),
                morph::state::to_string(to).c_str(), plan.ranks.size(), to.ranks(), s, ops);
    std::fflush(stdout);
    std::_Exit(0);  // the plan is not freed: its process ends
  }
  int status = 0;
  rusage usage{};
  ::wait4(child, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "\nbench_reshard: the planning process failed\n");
    std::exit(1);
  }
  std::printf(" peak_rss_mb=%.0f\n", static_cast<double>(usage.ru_maxrss) / 1024.0);  // ru_maxrss: KiB
}

// A GPT of `layers` layers and `hidden` units, vocabulary 32000 (padded to 128), untied,
// its weights in `dtype` and Adam's states in f32.
morph::state::StateSpec gpt(int layers, int hidden, morph::state::Dtype dtype) {
  morph::test::GptShape g;
  g.layers = layers;
  g.hidden = hidden;
  g.vocab = 32000;
  g.tied = false;
  g.vocab_multiple = 128;
  g.dtype = dtype;
  morph::state::StateSpec spec = morph::test::gpt_spec(g);
  spec.optimizer_dtype = morph::state::Dtype::f32;
  return spec;
}

int plan_only() {
  const morph::state::StateSpec spec = gpt(32, 4096, morph::state::Dtype::bf16);  // LLaMA-7B-size
  for (const auto& [from, to] : std::vector<std::pair<Layout, Layout>>{
           {{8, 1, 1, 0}, {64, 1, 1, 0}},
           {{8, 1, 1, 0}, {16, 2, 2, 0}},
           {{8, 1, 1, 1}, {64, 1, 1, 1}},
           {{8, 1, 1, 1}, {16, 2, 2, 1}},
           {{8, 2, 1, 0}, {64, 1, 1, 0}},
           {{8, 2, 1, 0}, {32, 2, 1, 0}},
           {{8, 2, 1, 1}, {32, 2, 1, 1}},
           {{32, 2, 1, 0}, {64, 1, 1, 0}},  // from a larger old dp: the old files' index must not grow with it
           {{64, 1, 1, 0}, {16, 2, 2, 0}},
           {{8, 2, 1, 1}, {64, 1, 1, 1}},  // with the next: ZeRO partitions from a larger old dp
           {{32, 2, 1, 1}, {64, 1, 1, 1}},
       }) {
    plan_case(spec, from, to, 1);
    plan_case(spec, from, to, 1, true);
    plan_case(spec, from, to, to.ranks());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--plan") return plan_only();
  if (argc != 1) {
    std::fprintf(stderr, "usage: bench_reshard [--plan]\n");
    return 2;
  }
  const char* bench_dir = std::getenv("MORPH_BENCH_DIR");
  const fs::path root = fs::path(bench_dir != nullptr && *bench_dir != '\0' ? bench_dir : fs::temp_directory_path().string()) /
                        fmt::format("morph_bench_reshard_{}", ::getpid());
  fs::remove_all(root);
  fs::create_directories(root);
  const morph::state::StateSpec spec = gpt(8, 1024, morph::state::Dtype::f32);
  const Layout from{1, 4, 2, 0};
  const Layout to{1, 2, 4, 0};
  const std::string a = (root / "a").string();
  std::printf("writing a %s checkpoint in %s ...\n", morph::state::to_string(from).c_str(), a.c_str());
  std::fflush(stdout);
  morph::test::write_synthetic_checkpoint(a, spec, from);
  std::uint64_t state_bytes = 0;
  for (const auto& e : fs::directory_iterator(a)) state_bytes += e.file_size();

  const char* builddir = std::getenv("MORPH_BUILDDIR");
  const std::string mpi = builddir ? fmt::format("{}/launcher/morph-reshard-mpi", builddir) : std::string();
  const bool have_mpi = !mpi.empty() && fs::exists(mpi) && std::system("command -v mpirun >/dev/null") == 0;
  const std::string mpi_flags = ::geteuid() == 0 ? "--allow-run-as-root --oversubscribe" : "--oversubscribe";
  const std::string b = (root / "b").string();

  std::vector<double> reshard_s, unverified_s, cp_s, central_s, distributed_s;
  std::uint64_t bytes = 0;
  auto reshard = [&] {
    reshard_s.push_back(seconds_of([&] { bytes = morph::state::reshard_checkpoint(a, b, to).bytes_read; }));
    fs::remove_all(b);
  };
  auto unverified = [&] {
    morph::state::ReshardOptions fast;
    fast.verify = false;
    unverified_s.push_back(seconds_of([&] { morph::state::reshard_checkpoint(a, b, to, fast); }));
    fs::remove_all(b);
  };
  auto copy = [&] {
    cp_s.push_back(seconds_of([&] { run_or_die(fmt::format("cp -r '{}' '{}' && sync -f '{}'", a, b, b)); }));
    fs::remove_all(b);
  };
  auto central = [&] {
    morph::state::ReshardOptions one;
    one.threads = 1;
    central_s.push_back(seconds_of([&] { morph::state::reshard_checkpoint(a, b, to, one); }));
    fs::remove_all(b);
  };
  auto distributed = [&] {
    if (!have_mpi) return;
    distributed_s.push_back(seconds_of([&] {
      run_or_die(fmt::format("mpirun {} -np 4 -x OMPI_MCA_btl=self,vader '{}' --from '{}' --to '{}' --layout {} --threads 1 >/dev/null",
                             mpi_flags, mpi, a, b, morph::state::to_string(to)));
    }));
    fs::remove_all(b);
  };
  for (int round = 0; round < 5; ++round) {
    if (round % 2 == 0) {
      reshard();
      copy();
      unverified();
      central();
      distributed();
    } else {
      distributed();
      central();
      unverified();
      copy();
      reshard();
    }
  }
  fs::remove_all(root);

  const double s = median_of(reshard_s);
  const double cp = median_of(cp_s);
  const double central_median = median_of(central_s);
  std::printf("state: %.3f GB in %d files (%s), %d new files (%s)\n", static_cast<double>(state_bytes) / 1e9,
              from.ranks(), morph::state::to_string(from).c_str(), to.ranks(), morph::state::to_string(to).c_str());
  std::printf("reshard (threads = cores, checksums verified): median %.3f s; cp -r + sync: median %.3f s\n", s, cp);
  std::printf("reshard without checking the old files' checksums (--no-verify): median %.3f s (%.2f of cp)\n",
              median_of(unverified_s), cp / median_of(unverified_s));
  std::printf("central (1 process, 1 thread): median %.3f s\n", central_median);
  std::string distributed_ratio = "nan";
  if (have_mpi) {
    const double d = median_of(distributed_s);
    std::printf("distributed (4 MPI processes, 1 thread each): median %.3f s\n", d);
    distributed_ratio = fmt::format("{:.2f}", central_median / d);
  } else {
    std::printf("distributed: skipped (no MPI build or mpirun; set MORPH_BUILDDIR)\n");
  }
  std::printf("reshard: bytes=%llu seconds=%.3f gbps=%.3f vs_cp=%.2f distributed_vs_central=%s\n",
              static_cast<unsigned long long>(bytes), s, static_cast<double>(bytes) / 1e9 / s, cp / s,
              distributed_ratio.c_str());
  return 0;
}
