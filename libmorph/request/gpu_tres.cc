#include "libmorph/request/gpu_tres.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {

std::optional<GpuTres> parse_gpu_tres(std::string_view tres, std::string_view what) {
  std::optional<GpuTres> found;
  std::string list(tres);
  for (char& c : list)
    if (c == ';') c = ',';
  for (std::string_view entry : split(list, ',')) {
    entry = trim(entry);
    std::string_view rest;
    if (entry.substr(0, 8) == "gres:gpu") rest = entry.substr(8);
    else if (entry.substr(0, 8) == "gres/gpu") rest = entry.substr(8);
    else continue;
    if (!rest.empty() && rest.front() != ':' && rest.front() != '=') continue;  // e.g. gres:gpumem
    GpuTres g;
    const std::vector<std::string_view> parts = split(rest.empty() ? rest : rest.substr(1), ':');
    if (rest.empty()) {
      g.count = 1;
    } else if (parts.size() == 1) {
      g.count = static_cast<int>(parse_int(parts[0], fmt::format("{}: GPU count", what), 1, 1 << 20));
    } else if (parts.size() == 2) {
      g.type = std::string(parts[0]);
      g.count = static_cast<int>(parse_int(parts[1], fmt::format("{}: GPU count", what), 1, 1 << 20));
    } else {
      throw Error(fmt::format("{}: {} is not gres:gpu[:TYPE]:COUNT", what, quote(entry)));
    }
    if (found) throw Error(fmt::format("{}: more than one GPU request in {}", what, quote(tres)));
    found = g;
  }
  return found;
}

std::string gpu_tres(const std::string& type, int count) { return fmt::format("gres:gpu:{}:{}", type, count); }

}  // namespace morph
