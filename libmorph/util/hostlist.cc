#include "libmorph/util/hostlist.h"


#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

constexpr std::size_t kMaxHosts = 65536;

std::vector<std::string_view> split_top_level(std::string_view list, std::string_view what) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '[' && ++depth > 1) throw Error(fmt::format("{}: nested '[' in {}", what, quote(list)));
    if (list[i] == ']' && --depth < 0) throw Error(fmt::format("{}: unbalanced ']' in {}", what, quote(list)));
    if (list[i] == ',' && depth == 0) {
      items.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) throw Error(fmt::format("{}: unbalanced '[' in {}", what, quote(list)));
  items.push_back(list.substr(start));
  return items;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list, std::string_view what) {
  std::vector<std::string> hosts;
  for (std::string_view item : split_top_level(trim(list), what)) {
    item = trim(item);
    const std::size_t open = item.find('[');
    if (open == std::string_view::npos) {
      if (!is_slurm_name(item)) throw Error(fmt::format("{}: invalid host name {}", what, quote(item)));
      hosts.emplace_back(item);
      continue;
    }
    const std::size_t close = item.find(']', open);
    const std::string_view prefix = item.substr(0, open);
    const std::string_view suffix = item.substr(close + 1);
    if (suffix.find('[') != std::string_view::npos)
      throw Error(fmt::format("{}: more than one bracket group in {}", what, quote(item)));
    for (std::string_view range : split(item.substr(open + 1, close - open - 1), ',')) {
      range = trim(range);
      const std::size_t dash = range.find('-');
      const std::string_view lo_text = range.substr(0, dash);
      const std::string_view hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
      const std::string where = fmt::format("{}: range {}", what, quote(range));
      // Digits only, as Slurm's hostlist takes them: parse_int() takes a sign, and "+1" was
      // "01" (its width counted the sign).
      for (std::string_view text : {trim(lo_text), trim(hi_text)})
        if (!is_digits(text))
          throw Error(fmt::format("{}: {} is not a number of digits", where, quote(text)));
      const std::int64_t lo = parse_int(lo_text, where, 0, 999'999'999);
      const std::int64_t hi = parse_int(hi_text, where, 0, 999'999'999);
      if (hi < lo) throw Error(fmt::format("{}: range {} runs backwards", what, quote(range)));
      if (static_cast<std::size_t>(hi - lo) >= kMaxHosts)
        throw Error(fmt::format("{}: more than {} hosts", what, kMaxHosts));
      const int width = static_cast<int>(trim(lo_text).size());
      for (std::int64_t n = lo; n <= hi; ++n) {
        std::string name = fmt::format("{}{:0{}}{}", prefix, n, width, suffix);
        if (!is_slurm_name(name)) throw Error(fmt::format("{}: invalid host name {}", what, quote(name)));
        hosts.push_back(std::move(name));
        if (hosts.size() > kMaxHosts) throw Error(fmt::format("{}: more than {} hosts", what, kMaxHosts));
      }
    }
  }
  return hosts;
}

}  // namespace morph
