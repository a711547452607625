#include "libmorph/request/gpu_tres.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "libmorph/request/limits.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {

namespace {

// "gres:gpu", "gres/gpu", "gres:gpu:a100:2", "gres/gpu=2" are GPUs; "gres:gpumem" is not.
// slurmctld reads an entry from its first "gres:" or "gres/" on, wherever that is, so
// "xgres:gpu:8" asks it for 8 GPUs: so it does here.
bool is_gpu_entry(std::string_view entry, std::string_view* rest) {
  const std::size_t at = std::min(entry.find("gres:"), entry.find("gres/"));
  if (at == std::string_view::npos) return false;
  entry.remove_prefix(at);
  if (entry.substr(0, 8) != "gres:gpu" && entry.substr(0, 8) != "gres/gpu") return false;
  *rest = entry.substr(8);
  return rest->empty() || rest->front() == ':' || rest->front() == '=';
}

std::vector<std::string_view> entries(const std::string& list) { return split(list, ','); }

std::string commas(std::string_view tres) {
  std::string list(tres);
  for (char& c : list)
    if (c == ';') c = ',';
  return list;
}

}  // namespace

std::string without_gpus(std::string_view tres) {
  const std::string list = commas(tres);
  std::string kept;
  for (std::string_view entry : entries(list)) {
    entry = trim(entry);
    std::string_view rest;
    if (entry.empty() || is_gpu_entry(entry, &rest)) continue;
    if (!kept.empty()) kept += ',';
    kept += entry;
  }
  return kept;
}

std::optional<GpuTres> parse_gpu_tres(std::string_view tres, std::string_view what) {
  std::optional<GpuTres> found;
  const std::string list = commas(tres);
  for (std::string_view entry : entries(list)) {
    entry = trim(entry);
    std::string_view rest;
    if (!is_gpu_entry(entry, &rest)) continue;
    GpuTres g;
    const std::vector<std::string_view> parts = split(rest.empty() ? rest : rest.substr(1), ':');
    if (rest.empty()) {
      g.count = 1;
    } else if (parts.size() == 1 && !parts[0].empty() && !std::isdigit(static_cast<unsigned char>(parts[0].front()))) {
      g.type = std::string(parts[0]);
      g.count = 1;
    } else if (parts.size() == 1) {
      g.count = static_cast<int>(parse_int(parts[0], fmt::format("{}: GPU count", what), 1, MORPH_MAX_GPUS));
    } else if (parts.size() == 2) {
      g.type = std::string(parts[0]);
      g.count = static_cast<int>(parse_int(parts[1], fmt::format("{}: GPU count", what), 1, MORPH_MAX_GPUS));
    } else {
      throw Error(fmt::format("{}: {} is not gres:gpu[:TYPE]:COUNT", what, quote(entry)));
    }
    // Slurm's GRES type names ("+4", " 4" or "a100=2" is no type).
    if (!g.type.empty() && !is_slurm_name(g.type))
      throw Error(fmt::format("{}: {} is not gres:gpu[:TYPE]:COUNT", what, quote(entry)));
    if (found) throw Error(fmt::format("{}: more than one GPU request in {}", what, quote(tres)));
    found = g;
  }
  return found;
}

bool names_gpus(std::string_view tres) {
  const std::string list = commas(tres);
  for (std::string_view entry : entries(list))
    if (std::string_view rest; is_gpu_entry(trim(entry), &rest)) return true;
  return false;
}

std::string gpu_tres(const std::string& type, int count) {
  return type.empty() ? fmt::format("gres:gpu:{}", count) : fmt::format("gres:gpu:{}:{}", type, count);
}

}  // namespace morph
