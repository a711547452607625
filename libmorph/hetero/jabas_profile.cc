#include "libmorph/hetero/jabas_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& path, const char* what) {
  const std::string text = read_text_file(path.string(), what, 16u << 20);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
}

template <typename T>
T field(const nlohmann::json& j, const char* key, const fs::path& where) {
  if (!j.is_object() || !j.contains(key)) throw Error(fmt::format("{}: missing \"{}\"", where.string(), key));
  const nlohmann::json& v = j.at(key);
  if constexpr (std::is_same_v<T, int>) {  // nlohmann would truncate 4.9 and wrap 2^32 + 4 to 4
    const bool fits = v.is_number_unsigned()
                          ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())
                          : v.is_number_integer() && v.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                                v.get<std::int64_t>() <= std::numeric_limits<int>::max();
    if (!fits)
      throw Error(fmt::format("{}: \"{}\" must be an integer, not {}", where.string(), key, v.dump()));
  }
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("{}: \"{}\" has the wrong type", where.string(), key));
  }
}

double time_ms(const nlohmann::json& j, const char* key, const fs::path& where) {
  const double v = field<double>(j, key, where);
  if (!std::isfinite(v) || v < 0) throw Error(fmt::format("{}: \"{}\" must be a time >= 0 ms, not {}", where.string(), key, v));
  return v;
}

void require_dir(const fs::path& path) {
  if (std::error_code ec; !fs::is_directory(path, ec)) throw Error(fmt::format("{}: missing (not a folder)", path.string()));
}

// Sub-folders named by a positive integer (local batch sizes).
std::vector<std::pair<int, fs::path>> batch_dirs(const fs::path& dir) {
  require_dir(dir);
  std::vector<std::pair<int, fs::path>> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    const std::string name = e.path().filename().string();
    out.emplace_back(static_cast<int>(parse_int(name, e.path().string() + ": local batch folder", 1, 1 << 24)), e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

AllreduceSamples read_allreduce(const fs::path& path) {
  AllreduceSamples s;
  s.path = path.string();
  const std::string text = read_text_file(s.path, "all-reduce profile", 1u << 20);
  int line_no = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_no;
    line = trim(line);
    if (line.empty()) continue;
    const std::vector<std::string_view> cols = split(line, ',');
    const std::string where = fmt::format("{}:{}", s.path, line_no);
    if (cols.size() != 2) throw Error(fmt::format("{}: expected ideal_ms,measured_ms", where));
    s.ideal_ms.push_back(parse_double(trim(cols[0]), where + ": ideal_ms", 0, 1e9));
    s.measured_ms.push_back(parse_double(trim(cols[1]), where + ": measured_ms", 0, 1e9));
  }
  if (s.ideal_ms.size() < 2) throw Error(fmt::format("{}: needs at least two ideal_ms,measured_ms lines", s.path));
  return s;
}

void read_servers(const fs::path& path, JabasProfile& p) {
  const nlohmann::json doc = read_json(path, "cluster description");
  if (!doc.is_object() || doc.empty()) throw Error(fmt::format("{}: expected an object of servers", path.string()));
  for (const auto& [name, j] : doc.items()) {
    const fs::path where = path.string() + ": " + name;
    JabasServer s;
    s.name = name;
    s.gpu = field<std::string>(j, "type", where);
    s.gpus = field<int>(j, "number", where);
    if (s.gpus < 2 || s.gpus % 2 != 0)
      throw Error(fmt::format("{}: \"number\" must be even (GPUs pair up into two identical groups), not {}",
                              where.string(), s.gpus));
    if (s.gpus > kMaxServerGpus)  // the search sums them in an int and sizes tables by them
      throw Error(fmt::format("{}: \"number\" {} is more than {} GPUs", where.string(), s.gpus, kMaxServerGpus));
    s.intra_bandwidth_bytes_per_s = field<double>(j, "intra_network_bandwidth", where);
    s.inter_bandwidth_bytes_per_s = field<double>(j, "inter_network_bandwidth", where);
    // At least 1 MB/s: below that an all-reduce takes forever and every plan is infinite.
    if (!(s.intra_bandwidth_bytes_per_s >= 1e6) || !(s.inter_bandwidth_bytes_per_s >= 1e6) ||
        !std::isfinite(s.intra_bandwidth_bytes_per_s) || !std::isfinite(s.inter_bandwidth_bytes_per_s))
      throw Error(fmt::format("{}: network bandwidths must be at least 1e6 bytes/s, not {} and {}", where.string(),
                              s.intra_bandwidth_bytes_per_s, s.inter_bandwidth_bytes_per_s));
    p.servers.push_back(std::move(s));
  }
}

JabasCompProfile read_comp(const fs::path& path, int lbs) {
  const nlohmann::json j = read_json(path, "computation profile");
  JabasCompProfile c;
  c.workers = field<int>(j, "num_models", path);
  if (c.workers < 1) throw Error(fmt::format("{}: \"num_models\" must be >= 1, not {}", path.string(), c.workers));
  if (const int file_lbs = field<int>(j, "lbs", path); file_lbs != lbs)
    throw Error(fmt::format("{}: \"lbs\" is {} in the folder of local batch {}", path.string(), file_lbs, lbs));
  c.data_ms = time_ms(j, "data_time", path);
  c.fwd_ms = time_ms(j, "fwd_time", path);
  c.bwd_ms = time_ms(j, "bwd_time", path);
  c.update_ms = time_ms(j, "update_time", path);
  c.copy_ms = time_ms(j, "copy_time", path);
  c.bn_sync_ms = j.contains("bn_sync_time") ? time_ms(j, "bn_sync_time", path) : 0;
  if (!(c.fwd_ms + c.bwd_ms > 0)) throw Error(fmt::format("{}: fwd_time + bwd_time must be positive", path.string()));
  return c;
}

void read_comp_profiles(const fs::path& comp_root, const fs::path& mem_root, JabasProfile& p) {
  for (const auto& [lbs, lbs_dir] : batch_dirs(comp_root)) {
    for (const fs::directory_entry& e : fs::directory_iterator(lbs_dir)) {
      if (!e.is_directory()) continue;
      const std::string name = e.path().filename().string();
      JabasServer* server = nullptr;
      for (JabasServer& s : p.servers)
        if (s.name == name) server = &s;
      if (server == nullptr)
        throw Error(fmt::format("{}: server {} is not in cluster_info.json", e.path().string(), quote(name)));
      JabasBatchProfile b;
      b.comp_dir = e.path().string();
      for (const fs::directory_entry& f : fs::directory_iterator(e.path()))
        if (f.is_regular_file() && f.path().extension() == ".json") b.comp.push_back(read_comp(f.path(), lbs));
      if (b.comp.empty()) throw Error(fmt::format("{}: no computation profile (*.json)", b.comp_dir));
      std::sort(b.comp.begin(), b.comp.end(), [](const auto& x, const auto& y) { return x.workers < y.workers; });
      for (std::size_t i = 1; i < b.comp.size(); ++i)
        if (b.comp[i].workers == b.comp[i - 1].workers)
          throw Error(fmt::format("{}: two profiles with num_models {}", b.comp_dir, b.comp[i].workers));
      if (b.comp.front().workers != 1) throw Error(fmt::format("{}: no profile with num_models 1", b.comp_dir));
      const fs::path mem = mem_root / std::to_string(lbs) / name / "max_memory_profile_info.json";
      const nlohmann::json m = read_json(mem, "memory profile");
      b.max_workers = field<int>(m, "max_num_models", mem);
      if (b.max_workers < 1 || b.max_workers > kMaxModelsPerGpu)
        throw Error(fmt::format("{}: \"max_num_models\" must be 1-{}, not {}", mem.string(), kMaxModelsPerGpu,
                                b.max_workers));
      server->by_local_batch[lbs] = std::move(b);
    }
  }
}

}  // namespace

const JabasServer* JabasProfile::find(const std::string& name) const {
  for (const JabasServer& s : servers)
    if (s.name == name) return &s;
  return nullptr;
}

JabasProfile load_jabas_profile(const std::string& dir) {
  const fs::path root(dir);
  require_dir(root);
  JabasProfile p;
  p.dir = dir;
  read_servers(root / "cluster_info.json", p);
  read_comp_profiles(root / "cluster_comp_profile_data", root / "cluster_mem_profile_data", p);
  const fs::path comm = root / "comm_profile_data";
  p.intra = read_allreduce(comm / "intra_comm_profile_data.txt");
  p.inter = read_allreduce(comm / "inter_comm_profile_data.txt");

  const fs::path buckets = root / "bucket_profile_data";
  require_dir(buckets);
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(buckets))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  if (files.size() != 1)
    throw Error(fmt::format("{}: expected one bucket profile (*.json), found {}", buckets.string(), files.size()));
  p.bucket_mib = field<std::vector<double>>(read_json(files[0], "bucket profile"), "bucket_size_distribution", files[0]);
  if (p.bucket_mib.empty()) throw Error(fmt::format("{}: \"bucket_size_distribution\" is empty", files[0].string()));
  for (double b : p.bucket_mib)
    if (!std::isfinite(b) || b <= 0 || b > kMaxBucketMiB)
      throw Error(fmt::format("{}: \"bucket_size_distribution\" has a size outside (0, {}] MiB: {}", files[0].string(),
                              kMaxBucketMiB, b));
  for (const JabasServer& s : p.servers)
    if (s.by_local_batch.empty())
      throw Error(fmt::format("{}: no computation profile for server {}", (root / "cluster_comp_profile_data").string(),
                              quote(s.name)));
  return p;
}

}  // namespace morph
