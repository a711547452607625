#include "libmorph/state/reshard_exec.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include "libmorph/state/checksum.h"
#include "libmorph/state/parallel.h"
#include "libmorph/state/safetensors.h"
#include "libmorph/util/error.h"

namespace morph::state {
namespace fs = std::filesystem;
namespace {

constexpr std::uint64_t kWindowBytes = 32u << 20;  // of a new tensor, assembled in memory
constexpr std::uint64_t kSpanBytes = 64u << 20;   // largest read serving several small runs

// The header bytes of a file whose header is written (to start its checksum).
std::vector<char> header_bytes(const std::string& path, std::uint64_t bytes) {
  std::vector<char> out(bytes);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot reopen: {}", path, std::strerror(errno)));
  std::uint64_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd, out.data() + done, bytes - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw Error(fmt::format("{}: cannot read its header back", path));
    }
    done += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return out;
}

// Fills window [begin, end) of a new tensor from the `ops` (sorted by offset) that overlap
// it. Small runs from one old file that lie close together (rows of a row-parallel
// weight) are served by one read of their span; zeros go where no op writes (padding).
void fill_window(const std::vector<const CopyOp*>& ops, std::size_t first, std::uint64_t begin, std::uint64_t end,
                 const OldCheckpoint& from, char* window, std::vector<char>& span, const std::string& what) {
  struct Run {
    int rank;
    std::uint64_t from, to, bytes;  // old file offset, window offset, length
  };
  std::vector<Run> runs;
  std::uint64_t filled = begin;
  for (std::size_t i = first; i < ops.size() && ops[i]->offset < end; ++i) {
    const CopyOp& op = *ops[i];
    const std::uint64_t lo = std::max(op.offset, begin);
    const std::uint64_t hi = std::min(op.offset + op.bytes, end);
    if (lo < filled) throw Error(fmt::format("internal: reshard ops overlap in {}", what));
    std::memset(window + (filled - begin), 0, lo - filled);
    runs.push_back({op.source_rank, op.source_offset + (lo - op.offset), lo - begin, hi - lo});
    filled = hi;
  }
  std::memset(window + (filled - begin), 0, end - filled);
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> extent;  // old rank -> [lo, hi)
  std::map<int, std::uint64_t> needed;
  for (const Run& r : runs) {
    auto [it, fresh] = extent.try_emplace(r.rank, r.from, r.from + r.bytes);
    if (!fresh) it->second = {std::min(it->second.first, r.from), std::max(it->second.second, r.from + r.bytes)};
    needed[r.rank] += r.bytes;
  }
  for (const auto& [rank, e] : extent) {
    const std::uint64_t width = e.second - e.first;
    const bool one_read = width > needed[rank] && width <= kSpanBytes && width <= 4 * needed[rank];
    if (one_read) {
      span.resize(width);
      from.read(rank, e.first, span.data(), width);
    }
    for (const Run& r : runs) {
      if (r.rank != rank) continue;
      if (one_read) std::memcpy(window + r.to, span.data() + (r.from - e.first), r.bytes);
      else from.read(rank, r.from, window + r.to, r.bytes);
    }
  }
}

// One new file, tensor by tensor in windows of kWindowBytes: each window assembled in
// memory, hashed and written with one call; then synced.
CheckpointFile build_one(const RankPlan& rp, const OldCheckpoint& from, const std::string& path,
                         const std::map<std::string, std::string>& metadata, char* window) {
  SafetensorsWriter writer(path, {rp.tensors.begin(), rp.tensors.end()}, metadata);
  const SafetensorsHeader& h = writer.header();
  Checksum sum;
  const std::vector<char> head = header_bytes(path, h.data_offset);
  sum.update(head.data(), head.size());
  std::vector<std::vector<const CopyOp*>> by_tensor(rp.tensors.size());
  for (const CopyOp& op : rp.ops) by_tensor.at(static_cast<std::size_t>(op.tensor)).push_back(&op);
  std::vector<char> span;
  for (std::size_t ti = 0; ti < h.tensors.size(); ++ti) {
    const TensorEntry& t = h.tensors[ti];
    std::vector<const CopyOp*>& ops = by_tensor[ti];
    std::sort(ops.begin(), ops.end(), [](const CopyOp* x, const CopyOp* y) { return x->offset < y->offset; });
    std::size_t first = 0;
    for (std::uint64_t begin = 0; begin < t.bytes(); begin += kWindowBytes) {
      const std::uint64_t end = std::min<std::uint64_t>(begin + kWindowBytes, t.bytes());
      while (first < ops.size() && ops[first]->offset + ops[first]->bytes <= begin) ++first;
      fill_window(ops, first, begin, end, from, window, span, path);
      sum.update(window, end - begin);
      writer.write(t, begin, window, end - begin);
    }
  }
  writer.finish();
  const std::uint64_t bytes = h.data_offset + (h.tensors.empty() ? 0 : h.tensors.back().end);
  return {rp.rank, fs::path(path).filename().string(), bytes, sum.digest()};
}

// Room beside the old files for what a reshard opens besides: stdio, the new files its
// threads write, MPI's connections.
constexpr rlim_t kSpareFiles = 64;

// The soft limit on open files, raised toward the hard one to hold `files` at once and
// the spare: 1,024 old ranks pass the usual soft limit of 1,024.
rlim_t allow_open_files(std::size_t files) {
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return RLIM_INFINITY;
  const rlim_t want = static_cast<rlim_t>(files) + kSpareFiles;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
    lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? want : std::min(want, lim.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &lim);
    ::getrlimit(RLIMIT_NOFILE, &lim);
  }
  return lim.rlim_cur;
}

}  // namespace

OldCheckpoint::OldCheckpoint(const std::string& dir, const CheckpointIndex& index) : dir_(dir), index_(index) {
  verify_files(dir, index, false);
  const rlim_t limit = allow_open_files(index.files.size());
  for (const CheckpointFile& f : index.files) {
    const std::string path = (fs::path(dir) / f.name).string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      for (int open_fd : fds_) ::close(open_fd);  // the destructor does not run for a constructor that throws
      if (e == EMFILE)
        throw Error(fmt::format("{}: cannot open: {}; a reshard holds the {} files of the old ranks open at once, "
                                "and this process may open {} (`ulimit -Hn` bounds it; raise it)",
                                path, std::strerror(e), index.files.size(), limit));
      throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(e)));
    }
    paths_.push_back(path);
    fds_.push_back(fd);
    sizes_.push_back(f.bytes);
  }
}

OldCheckpoint::~OldCheckpoint() {
  for (int fd : fds_) ::close(fd);
}

void OldCheckpoint::read(int rank, std::uint64_t offset, char* out, std::uint64_t bytes) const {
  const auto r = static_cast<std::size_t>(rank);
  if (offset + bytes > sizes_.at(r)) throw Error(fmt::format("{}: read past the end", paths_[r]));
  while (bytes > 0) {
    const ssize_t n = ::pread(fds_[r], out, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(fmt::format("{}: read at byte {} failed: {}", paths_[r], offset,
                              n == 0 ? "unexpected end of file" : std::strerror(errno)));
    out += n;
    offset += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::uint64_t>(n);
  }
}

void OldCheckpoint::verify_checksums(int threads) const { verify_files(dir_, index_, true, threads); }

std::vector<SafetensorsHeader> OldCheckpoint::headers() const {
  std::vector<SafetensorsHeader> out;
  for (std::size_t i = 0; i < fds_.size(); ++i) out.push_back(SafetensorsReader(paths_[i]).header());
  verify_contents(dir_, index_, out);
  return out;
}

std::vector<SafetensorsHeader> read_headers(const std::string& dir, const CheckpointIndex& index, bool verify) {
  const OldCheckpoint files(dir, index);
  if (verify) files.verify_checksums();
  return files.headers();
}

// Jobs are new ranks, file by file in the planner's order. The first job of a file plans
// it; the file's slot keeps the plan for its other replicas until the last takes it up.
BuiltFiles build_files(const FilePlanner& planner, const OldCheckpoint& from, const std::string& stage_dir,
                       int threads) {
  struct Job {
    std::size_t file;
    int rank;
  };
  struct Slot {
    std::mutex mutex;
    std::shared_ptr<const ReshardPlan> plan;
    std::size_t waiting = 0;  // replicas not yet taken up
  };
  std::vector<Job> jobs;
  std::vector<Slot> slots(planner.file_count());
  for (std::size_t f = 0; f < planner.file_count(); ++f) {
    for (int r : planner.ranks_of(f)) jobs.push_back({f, r});
    slots[f].waiting = planner.ranks_of(f).size();
  }
  const std::string layout = to_string(planner.to());
  BuiltFiles out;
  out.files.resize(jobs.size());
  std::mutex read_mutex;
  parallel_for(jobs.size(), threads, [&](std::size_t i) {
    const Job& job = jobs[i];
    Slot& slot = slots[job.file];
    std::shared_ptr<const ReshardPlan> plan;
    {
      const std::lock_guard<std::mutex> lock(slot.mutex);
      if (slot.plan == nullptr) {
        slot.plan = std::make_shared<const ReshardPlan>(planner.plan(job.file));
        const std::lock_guard<std::mutex> read_lock(read_mutex);
        out.bytes_read += slot.plan->bytes;
      }
      plan = slot.plan;
      if (--slot.waiting == 0) slot.plan.reset();
    }
    const std::unique_ptr<char[]> window(new char[kWindowBytes]);
    const std::map<std::string, std::string> metadata{{"layout", layout}, {"rank", std::to_string(job.rank)}};
    out.files[i] = build_one(plan->rank(job.rank), from, (fs::path(stage_dir) / rank_file_name(job.rank)).string(),
                             metadata, window.get());
  });
  std::sort(out.files.begin(), out.files.end(),
            [](const CheckpointFile& a, const CheckpointFile& b) { return a.rank < b.rank; });
  return out;
}

CheckpointIndex resharded_index(const CheckpointIndex& from, const Layout& to, std::vector<CheckpointFile> files) {
  CheckpointIndex index = from;
  index.layout = to;
  std::sort(files.begin(), files.end(), [](const CheckpointFile& a, const CheckpointFile& b) { return a.rank < b.rank; });
  index.files = std::move(files);
  return index;
}

ReshardSummary reshard_checkpoint(const std::string& from, const std::string& to, const Layout& layout,
                                  const ReshardOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const CheckpointIndex index = read_index(from);
  const OldCheckpoint old(from, index);
  if (options.verify) old.verify_checksums(options.threads);
  const FilePlanner planner(index.spec, index.layout, old.headers(), layout, options.nodes);
  CheckpointStage stage(to, from);
  BuiltFiles built = build_files(planner, old, stage.path(), options.threads);
  ReshardSummary summary;
  summary.from = index.layout;
  summary.to = layout;
  summary.bytes_read = built.bytes_read;
  for (const CheckpointFile& f : built.files) summary.bytes_written += f.bytes;
  summary.most_ops_held = planner.most_ops_held();
  // The checksums are of the bytes written; commit checks sizes, and readers the checksums.
  stage.commit(resharded_index(index, layout, std::move(built.files)), false);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace morph::state
