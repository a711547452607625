// morph-profile topo: this machine's or a saved topology, as a tree or JSON.
#include <iostream>
#include <memory>

#include "profiler/commands.h"
#include "profiler/topology_report.h"

namespace morph::profile {
namespace {

struct TopoArgs {
  std::string xml_path;
  bool json = false;
};

void run_topo(const TopoArgs& args) {
  const hw::Topology topology = hw::load_topology(args.xml_path);
  if (args.json) std::cout << hw::topology_json(topology).dump(2) << '\n';
  else std::cout << hw::topology_text(topology);
}

}  // namespace

void add_topo_command(command_line::Command& app, Context&) {
  auto args = std::make_shared<TopoArgs>();
  command_line::Command cmd = app.subcommand("topo", "GPUs, PCIe links, NVLink peers, NICs and NUMA nodes (hwloc)");
  cmd.option("--topology", args->xml_path, "hwloc XML file (lstopo --of xml) instead of this machine");
  cmd.flag("--json", args->json, "machine-readable output");
  cmd.on_run([args] { run_topo(*args); });
}

}  // namespace morph::profile
