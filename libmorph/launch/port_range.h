// morph.conf's MasterPorts=LOW-HIGH: the ports morphrun gives its steps' rendezvous
// (MASTER_PORT, rank_env.h). The default ends below Linux's ephemeral ports
// (net.ipv4.ip_local_port_range, 32768-60999), which outgoing connections take at random.
#pragma once

namespace morph::launch {

struct PortRange {
  int low = 20000, high = 32767;  // at least 8 ports: one job's concurrent steps
};

}  // namespace morph::launch
