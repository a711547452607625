#include "daemon/node_state.h"

extern "C" {
#include <slurm/slurm.h>
}

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libmorph/util/hostlist.h"
#include "libmorph/util/parse.h"

namespace morph::daemon {
namespace {

// gres_used's items: split at the commas outside an "(IDX:...)" group, which has its own.
std::vector<std::string_view> gres_items(std::string_view gres_used) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= gres_used.size(); ++i) {
    if (i == gres_used.size() || (gres_used[i] == ',' && depth == 0)) {
      items.push_back(trim(gres_used.substr(start, i - start)));
      start = i + 1;
    } else if (gres_used[i] == '(') {
      ++depth;
    } else if (gres_used[i] == ')') {
      depth = std::max(0, depth - 1);
    }
  }
  return items;
}

// One item, "NAME[:TYPE]:COUNT[(IDX:LIST)]": its name, count and GRES indexes (none
// given: `indexed` false; "IDX:N/A", nothing allocated: none).
struct GresUse {
  std::string_view name;
  int count = 0;
  bool indexed = false;
  std::vector<int> indexes;
};

std::optional<GresUse> gres_use(std::string_view item) {
  GresUse use;
  std::string_view head = item;
  if (const auto paren = item.find('('); paren != std::string_view::npos) {
    head = item.substr(0, paren);
    std::string_view group = item.substr(paren + 1);
    if (!group.empty() && group.back() == ')') group.remove_suffix(1);
    if (group.rfind("IDX:", 0) == 0) {
      use.indexed = true;
      group.remove_prefix(4);
      // A bit_fmt() range list ("0-1,3"), read as a host list of bare numbers.
      if (group != "N/A")
        for (const std::string& index : expand_hostlist("[" + std::string(group) + "]", "gres_used IDX"))
          use.indexes.push_back(static_cast<int>(parse_int(index, "gres_used IDX", 0, 1 << 16)));
    }
  }
  const auto colon = head.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  use.name = head.substr(0, head.find(':'));
  use.count = static_cast<int>(parse_int(head.substr(colon + 1), "gres_used", 0, 1 << 16));
  return use;
}

}  // namespace

bool usable(std::uint32_t state) {
  const std::uint32_t base = state & NODE_STATE_BASE;
  if (base == NODE_STATE_DOWN || base == NODE_STATE_FUTURE || base == NODE_STATE_UNKNOWN) return false;
  constexpr std::uint32_t kKeepOff = NODE_STATE_DRAIN | NODE_STATE_FAIL | NODE_STATE_NO_RESPOND |
                                     NODE_STATE_REBOOT_ISSUED | NODE_STATE_POWERING_DOWN | NODE_STATE_INVALID_REG |
                                     NODE_STATE_REBOOT_REQUESTED | NODE_STATE_POWER_DOWN;  // once idle
  return (state & kKeepOff) == 0;
}

int gpus_in_use(std::string_view gres_used) {
  int counted = 0;        // GPUs allocated whole where gres_used gives no indexes
  std::set<int> indexes;  // GPUs held whole or in part, by index
  for (const std::string_view item : gres_items(gres_used)) {
    std::optional<GresUse> use;
    try {
      use = gres_use(item);
    } catch (const std::exception&) {
      continue;  // an item Morph cannot read counts nothing, as before
    }
    if (!use) continue;
    const bool whole = use->name == "gpu";
    if (!whole && use->name != "shard" && use->name != "mps") continue;
    if (use->indexed) indexes.insert(use->indexes.begin(), use->indexes.end());
    else if (whole) counted += use->count;
  }
  return counted + static_cast<int>(indexes.size());
}

}  // namespace morph::daemon
