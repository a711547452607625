// morph.conf as morphrun reads it: --config, else $MORPH_CONF, else the installed file;
// when none of them exists, the defaults (a node without morph.conf can still launch).
#pragma once

#include <string>

#include "libmorph/config/morph_conf.h"

namespace morph::launcher {

MorphConfig load_launcher_config(const std::string& path_option);

}  // namespace morph::launcher
