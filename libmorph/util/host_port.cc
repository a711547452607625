#include "libmorph/util/host_port.h"

#include <arpa/inet.h>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_';
}

}  // namespace

HostPort parse_host_port(std::string_view text, std::string_view what, bool allow_port_zero) {
  auto bad = [&](std::string_view why) {
    return Error(fmt::format("{}: {} is not HOST:PORT ({})", what, quote(text), why));
  };
  HostPort address;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw bad("an IPv6 address is written [ADDRESS]:PORT");
    address.host = std::string(text.substr(1, close - 1));
    in6_addr parsed{};
    if (::inet_pton(AF_INET6, address.host.c_str(), &parsed) != 1) throw bad("not an IPv6 address");
    port_text = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) throw bad("no port");
    address.host = std::string(text.substr(0, colon));
    if (address.host.find(':') != std::string::npos) throw bad("an IPv6 address is written [ADDRESS]:PORT");
    for (char c : address.host)
      if (!host_char(c)) throw bad("bad character in the host");
    port_text = text.substr(colon + 1);
  }
  if (address.host.empty()) throw bad("no host");
  if (address.host.size() > 253) throw bad("the host is longer than 253 characters");
  if (!is_digits(port_text))
    throw bad("the port is not a number of digits");
  address.port = static_cast<std::uint16_t>(
      parse_int(port_text, fmt::format("{}: port", what), allow_port_zero ? 0 : 1, 65535));
  return address;
}

std::string to_string(const HostPort& address) {
  return address.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", address.host, address.port)
                                                      : fmt::format("{}:{}", address.host, address.port);
}

}  // namespace morph
