// The TCP edges of reporting: a socket that closes itself, a connect and a send bounded
// by a deadline (non-blocking socket + poll), and a listening socket.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "libmorph/util/host_port.h"

namespace morph::report {

using Deadline = std::chrono::steady_clock::time_point;

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  int fd() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Milliseconds left until `deadline` for poll(2), at least 0.
int poll_timeout_ms(Deadline deadline);

// A non-blocking TCP connection to `address`, made before `deadline`. Throws morph::Error
// "connect to HOST:PORT: why".
Socket connect_before(const HostPort& address, Deadline deadline);

// Writes all of `data` before `deadline`, then shuts the write side (the peer reads to
// EOF). Throws morph::Error.
void send_all_and_shutdown(const Socket& socket, std::string_view data, Deadline deadline);

// Reads until EOF, at most `max_bytes`, before `deadline`. Throws morph::Error.
std::string receive_all(const Socket& socket, std::size_t max_bytes, Deadline deadline);

// A non-blocking listening socket bound to `address` (port 0: any free port).
Socket listen_on(const HostPort& address, int backlog);

// The port a socket is bound to.
std::uint16_t local_port(const Socket& socket);

// The peer's address as text, for log lines ("" when unknown).
std::string peer_name(const Socket& socket);

}  // namespace morph::report
