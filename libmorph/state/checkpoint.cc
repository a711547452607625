#include "libmorph/state/checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "libmorph/state/checksum.h"
#include "libmorph/state/parallel.h"
#include "libmorph/state/shard_map.h"
#include "libmorph/util/error.h"
#include "libmorph/util/json_depth.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph::state {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::uint64_t parse_hex(const std::string& text, const std::string& what) {
  if (text.size() != 16 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw Error(fmt::format("{}: checksum {} is not 16 hex digits", what, quote(text)));
  return std::stoull(text, nullptr, 16);
}

void write_file_synced(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      throw Error(fmt::format("{}: write failed: {}", path, std::strerror(e)));
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int e = errno;
  if (::close(fd) != 0 || !synced)
    throw Error(fmt::format("{}: sync failed: {}", path, std::strerror(synced ? errno : e)));
}

json index_json(const CheckpointIndex& index) {
  json files = json::array();
  for (const CheckpointFile& f : index.files)
    files.push_back({{"rank", f.rank}, {"file", f.name}, {"bytes", f.bytes}, {"xxh3", checksum_hex(f.checksum)}});
  return {{"format", kCheckpointFormat},
          {"layout", to_json(index.layout)},
          {"progress", {{"step", index.progress.step}, {"samples", index.progress.samples}}},
          {"trainer", index.trainer},
          {"spec", to_json(index.spec)},
          {"files", std::move(files)}};
}

// Every file holds exactly the tensors the layout places on its rank, of their dtypes and
// shapes. Checked from their declarations alone, before any rank's segments are computed
// (one per row of a row-parallel shard), so a file that does not fit is refused cheaply.
void check_file_tensors(const CheckpointIndex& index, const std::vector<SafetensorsHeader>& headers,
                        const std::string& path) {
  if (static_cast<int>(headers.size()) != index.layout.ranks())
    throw Error(fmt::format("{}: {} ranks need {} files, {} given", path, to_string(index.layout),
                            index.layout.ranks(), headers.size()));
  const std::string layout = to_string(index.layout);
  struct Placed {
    std::vector<TensorDecl> decls;  // in file order
    std::map<std::string, const TensorDecl*> by_name;
  };
  std::map<std::pair<int, int>, Placed> placed;  // (tp, pp) -> what its ranks hold
  for (int r = 0; r < index.layout.ranks(); ++r) {
    const RankCoords c = coords_of(index.layout, r);
    auto [group, fresh] = placed.try_emplace({c.tp, c.pp});
    Placed& p = group->second;
    if (fresh) {
      p.decls = data_parallel_decls(index.spec, index.layout, c.tp, c.pp);
      for (const TensorDecl& d : p.decls) p.by_name.emplace(d.name, &d);
    }
    const SafetensorsHeader& header = headers[static_cast<std::size_t>(r)];
    const std::string file = rank_file_name(r);
    for (const TensorEntry& e : header.tensors) {
      const auto it = p.by_name.find(e.name);
      if (it == p.by_name.end())
        throw Error(fmt::format("{}: {} holds tensor {}, which the spec does not place on rank {} under {}", path,
                                file, quote(e.name), r, layout));
      const TensorDecl& d = *it->second;
      if (e.dtype != d.dtype || e.shape != d.shape)  // worded as plan_reshard() words it
        throw Error(fmt::format("{}: {}: old rank {} under {}: tensor {} is {} {} in its file; the layout needs {} {}",
                                path, file, r, layout, quote(e.name), dtype_name(e.dtype), shape_text(e.shape),
                                dtype_name(d.dtype), shape_text(d.shape)));
    }
    if (header.tensors.size() != p.decls.size()) {
      for (const TensorDecl& d : p.decls)
        if (header.find(d.name) == nullptr)
          throw Error(fmt::format("{}: {}: old rank {} under {}: tensor {} is missing from its file", path, file, r,
                                  layout, quote(d.name)));
      throw Error(fmt::format("{}: {}: old rank {} under {}: its file holds {} tensors, the layout places {} on it",
                              path, file, r, layout, header.tensors.size(), p.decls.size()));
    }
    check_stamp(header, index.layout, r, fmt::format("{}: {}", path, file));  // after what says more of a layout
  }
}

}  // namespace

std::string rank_file_name(int rank) { return fmt::format("rank_{:05d}.safetensors", rank); }

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open folder: {}", dir, std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) throw Error(fmt::format("{}: cannot sync folder: {}", dir, std::strerror(e)));
}

namespace {

// Member `key` of `j`, or null when `j` is no object or has none: a reference, not a copy.
const json& member(const json& j, const char* key) {
  static const json kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// The index in `j`, read from `path`; every error names `path`.
CheckpointIndex index_from_json(const json& j, const std::string& path) {
  const json& format = member(j, "format");
  if (!format.is_string() || format.get<std::string>() != kCheckpointFormat || !j.contains("layout"))
    throw Error(fmt::format("{}: not a {} index", path, kCheckpointFormat));
  CheckpointIndex index;
  index.layout = layout_from_json(j.at("layout"), path);
  try {  // the spec's own checks and the layout's do not know the file
    index.spec = state_spec_from_json(member(j, "spec"), path + ": spec");
    check_layout(index.spec, index.layout);
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with(path)) throw;
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  const json& progress = member(j, "progress");
  if (!progress.is_object() || !member(progress, "step").is_number_unsigned() ||
      !member(progress, "samples").is_number_unsigned())
    throw Error(path + ": progress must hold unsigned step and samples");
  index.progress = {progress.at("step").get<std::uint64_t>(), progress.at("samples").get<std::uint64_t>()};
  index.trainer = j.contains("trainer") ? j.at("trainer") : json::object();
  const json& files = member(j, "files");
  if (!files.is_array() || static_cast<int>(files.size()) != index.layout.ranks())
    throw Error(fmt::format("{}: {} ranks need {} files", path, to_string(index.layout), index.layout.ranks()));
  for (std::size_t r = 0; r < files.size(); ++r) {
    const json& f = files[r];
    const std::string what = fmt::format("{}: files[{}]", path, r);
    if (!f.is_object() || !member(f, "rank").is_number_integer() || !member(f, "file").is_string() ||
        !member(f, "bytes").is_number_unsigned() || !member(f, "xxh3").is_string())
      throw Error(what + ": needs rank, file, bytes and xxh3");
    CheckpointFile cf{f.at("rank").get<int>(), f.at("file").get<std::string>(), f.at("bytes").get<std::uint64_t>(),
                      parse_hex(f.at("xxh3").get<std::string>(), what)};
    if (cf.rank != static_cast<int>(r) || cf.name != rank_file_name(cf.rank))
      throw Error(fmt::format("{}: expected rank {} in {}", what, r, rank_file_name(static_cast<int>(r))));
    index.files.push_back(std::move(cf));
  }
  // Every parameter is stored at least once: a shape larger than all the files together
  // is a damaged spec, refused before anything is sized by it (a row split allocates
  // per row).
  std::uint64_t stored = 0;
  for (const CheckpointFile& f : index.files)  // saturating: the sizes are the index's claims
    stored = f.bytes > std::numeric_limits<std::uint64_t>::max() - stored ? std::numeric_limits<std::uint64_t>::max()
                                                                          : stored + f.bytes;
  for (const ParamSpec& p : index.spec.params)
    if (p.elements() > stored / dtype_bytes(p.dtype))
      throw Error(fmt::format("{}: spec: parameter {} holds {} elements of {} bytes, more than the {} bytes of "
                              "all the files",
                              path, quote(p.name), p.elements(), dtype_bytes(p.dtype), stored));
  return index;
}

}  // namespace

CheckpointIndex read_index(const std::string& dir) {
  const std::string path = (fs::path(dir) / "index.json").string();
  try {
    const std::string text = read_text_file(path, "checkpoint index");
    JsonDepthCheck<json> nesting(kMaxIndexNesting,
                                 fmt::format("{}: JSON nested deeper than {} levels", path, kMaxIndexNesting));
    json::sax_parse(text, &nesting);
    return index_from_json(json::parse(text), path);
  } catch (const json::exception& e) {  // not JSON, or a member of another type than the format's
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
}

void verify_files(const std::string& dir, const CheckpointIndex& index, bool checksums, int threads) {
  for (const CheckpointFile& f : index.files) {
    const std::string path = (fs::path(dir) / f.name).string();
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) throw Error(fmt::format("{}: {}", path, ec.message()));
    if (size != f.bytes) throw Error(fmt::format("{}: {} bytes, the index says {}", path, size, f.bytes));
  }
  if (!checksums) return;
  parallel_for(index.files.size(), threads, [&](std::size_t i) {  // whole files: one per thread
    const std::string path = (fs::path(dir) / index.files[i].name).string();
    if (file_checksum(path) != index.files[i].checksum)
      throw Error(fmt::format("{}: checksum mismatch (corrupted file)", path));
  });
}

void check_stamp(const SafetensorsHeader& header, const Layout& layout, int rank, const std::string& what) {
  for (const auto& [key, want] :
       {std::pair<std::string, std::string>{"rank", std::to_string(rank)}, {"layout", to_string(layout)}})
    if (const auto it = header.metadata.find(key); it != header.metadata.end() && it->second != want)
      throw Error(fmt::format("{}: its metadata says {} {}, where the checkpoint needs {} {}", what, key,
                              quote(it->second), key, quote(want)));
}

void verify_contents(const std::string& dir, const CheckpointIndex& index,
                     const std::vector<SafetensorsHeader>& headers) {
  const std::string path = (fs::path(dir) / "index.json").string();
  check_layers(index.spec, path + ": spec");
  check_file_tensors(index, headers, path);
}

std::string stage_folder(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + ".partial";
}

std::string stage_lock_file(const std::string& dir) { return stage_folder(dir) + ".lock"; }

namespace {

// An exclusive flock(2) on `lock`, created if need be, for the writer of checkpoint `dir`.
// A holder removes the file before it closes it, so a lock taken on a file no longer at
// `lock` (its holder removed it since it was opened here) is taken again on the new one.
int lock_stage(const std::string& lock, const std::string& dir) {
  for (;;) {
    // Opened for writing: NFS turns flock(2) into an fcntl lock, which needs it.
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(fmt::format("{}: cannot create: {}", lock, std::strerror(errno)));
    auto fail = [&](const std::string& message) {
      ::close(fd);
      throw Error(message);
    };
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK)
        fail(fmt::format("checkpoint {}: another process is writing it (it holds {})", dir, lock));
      // A file system without locks (NFS mounted nolock, Lustre without flock): unlocked,
      // as before the lock, rather than no checkpoint at all.
      if (errno == ENOLCK || errno == ENOSYS || errno == EOPNOTSUPP) return fd;
      fail(fmt::format("{}: cannot lock: {}", lock, std::strerror(errno)));
    }
    struct stat held {}, named {};
    if (::fstat(fd, &held) != 0) fail(fmt::format("{}: {}", lock, std::strerror(errno)));
    if (::stat(lock.c_str(), &named) == 0) {
      if (named.st_dev == held.st_dev && named.st_ino == held.st_ino) return fd;
    } else if (errno != ENOENT) {
      fail(fmt::format("{}: {}", lock, std::strerror(errno)));
    }
    ::close(fd);
  }
}

// The folder that holds `path`'s entry ("." for a relative name without one).
std::string parent_of(const fs::path& path) {
  return path.parent_path().empty() ? "." : path.parent_path().string();
}

// Creates `dir` and its missing ancestors, each synced into its parent: a commit's rename
// into a folder created for it is lost with the folder on a power cut otherwise.
void create_synced(const fs::path& dir) {
  std::vector<fs::path> missing;  // deepest first
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    if (ec) break;
    missing.push_back(p);
  }
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create: {}", dir.string(), ec.message()));
  for (auto p = missing.rbegin(); p != missing.rend(); ++p) sync_directory(parent_of(*p));
}

}  // namespace

CheckpointStage::CheckpointStage(std::string dir, const std::string& source)
    : dir_(std::move(dir)), stage_(stage_folder(dir_)), lock_(stage_lock_file(dir_)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  // The next writer of X removes X.partial as a crash's stage, committed or not.
  if (dir_.ends_with(".partial") || dir_.ends_with(".partial.lock"))
    throw Error(fmt::format("{}: a checkpoint may not end in .partial or .partial.lock, the names of another "
                            "checkpoint's staging folder and lock; give it another name",
                            dir_));
  std::error_code ec;
  const fs::path parent = fs::path(stage_).parent_path();
  if (!parent.empty()) create_synced(parent);
  // Locked before anything is checked or removed: a stage found after this is a crash's.
  lock_fd_ = lock_stage(lock_, dir_);
  try {
    if (fs::exists(dir_)) throw Error(fmt::format("{}: already exists; a checkpoint is never overwritten", dir_));
    if (!source.empty() && fs::equivalent(source, stage_, ec))
      throw Error(fmt::format("{}: is the staging folder of {}, which would be cleared before it is read; give the new "
                              "checkpoint another name",
                              source, dir_));
    fs::remove_all(stage_, ec);
    if (ec) throw Error(fmt::format("{}: cannot remove a partial checkpoint: {}", stage_, ec.message()));
    if (!fs::create_directories(stage_, ec) || ec)
      throw Error(fmt::format("{}: cannot create: {}", stage_, ec ? ec.message() : "exists"));
  } catch (...) {
    unlock();
    throw;
  }
}

CheckpointStage::~CheckpointStage() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(stage_, ec);
  }
  unlock();
}

void CheckpointStage::unlock() {
  if (lock_fd_ < 0) return;
  ::unlink(lock_.c_str());
  ::close(lock_fd_);
  lock_fd_ = -1;
}

std::string CheckpointStage::file_path(int rank) const { return (fs::path(stage_) / rank_file_name(rank)).string(); }

void CheckpointStage::commit(const CheckpointIndex& index, bool verify_checksums) {
  if (static_cast<int>(index.files.size()) != index.layout.ranks())
    throw Error(fmt::format("{}: {} files for {} ranks", stage_, index.files.size(), index.layout.ranks()));
  verify_files(stage_, index, verify_checksums);
  write_file_synced((fs::path(stage_) / "index.json").string(), index_json(index).dump(1) + "\n");
  sync_directory(stage_);
  // rename(2) would replace an empty folder created at `dir_` since the stage began;
  // RENAME_NOREPLACE refuses, where the file system offers it (not NFS).
  int rc = ::renameat2(AT_FDCWD, stage_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
    if (fs::exists(dir_)) throw Error(fmt::format("{}: already exists; a checkpoint is never overwritten", dir_));
    rc = ::rename(stage_.c_str(), dir_.c_str());
  }
  if (rc != 0 && (errno == EEXIST || errno == ENOTEMPTY))
    throw Error(fmt::format("{}: already exists; a checkpoint is never overwritten", dir_));
  if (rc != 0) throw Error(fmt::format("{}: cannot rename to {}: {}", stage_, dir_, std::strerror(errno)));
  committed_ = true;
  unlock();
  // Committed: a caller told otherwise would try again and find it there.
  try {
    sync_directory(parent_of(dir_));
  } catch (const Error& e) {
    fmt::print(stderr, "morph: warning: checkpoint {} is committed, but not yet durable: {}\n", dir_, e.what());
  }
}

}  // namespace morph::state
