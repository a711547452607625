// Slurm-style host lists: "node[01-04,07],login1" -> node01 node02 node03 node04 node07 login1.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace morph {

// One bracket group per name; ranges keep their zero padding. Throws morph::Error
// naming `what` on malformed lists or more than 65536 names.
std::vector<std::string> expand_hostlist(std::string_view list, std::string_view what);

}  // namespace morph
