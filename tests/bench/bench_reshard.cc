// Resharding a ~2 GB training state (GPT-like, f32 parameters and Adam states) from
// TP 4 x PP 2 to TP 2 x PP 4 on this machine, side by side with `cp -r` of the same
// checkpoint, and central (one process, one thread) against distributed (4 MPI
// processes of morph-reshard-mpi) execution. Medians of 5 rounds, each round in
// alternating order (a disk's write-back makes whichever runs second slower). The
// folder is $MORPH_BENCH_DIR (default: the temporary folder). Last line:
//   reshard: bytes=<n> seconds=<s> gbps=<g> vs_cp=<cp seconds / reshard seconds>
//            distributed_vs_central=<central seconds / distributed seconds>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

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

}  // namespace

int main() {
  const char* bench_dir = std::getenv("MORPH_BENCH_DIR");
  const fs::path root = fs::path(bench_dir != nullptr && *bench_dir != '\0' ? bench_dir : fs::temp_directory_path().string()) /
                        fmt::format("morph_bench_reshard_{}", ::getpid());
  fs::remove_all(root);
  fs::create_directories(root);
  morph::test::GptShape g;
  g.layers = 8;
  g.hidden = 1024;
  g.vocab = 32000;
  g.tied = false;
  g.vocab_multiple = 128;
  g.dtype = morph::state::Dtype::f32;
  morph::state::StateSpec spec = morph::test::gpt_spec(g);
  spec.optimizer_dtype = morph::state::Dtype::f32;
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
    reshard_s.push_back(seconds_of([&] { bytes = morph::state::reshard_checkpoint(a, b, to).plan.bytes; }));
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
