// "HOST:PORT" network addresses (morph.conf MorphdAddress=): a host name or IPv4 address,
// or an IPv6 address in brackets, and a port.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace morph {

struct HostPort {
  std::string host;         // without the brackets of an IPv6 address
  std::uint16_t port = 0;
};

// Throws morph::Error naming `what` and the bad text. Port 0 ("any free port", for a
// listening socket) only when allow_port_zero.
HostPort parse_host_port(std::string_view text, std::string_view what, bool allow_port_zero = false);

std::string to_string(const HostPort& address);

}  // namespace morph
