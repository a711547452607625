// morph-profile topo's two outputs: a readable tree and JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "profiler/topology.h"

namespace morph::hw {

std::string topology_text(const Topology& topology);
nlohmann::json topology_json(const Topology& topology);

}  // namespace morph::hw
