#include "daemon/report/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::report {
namespace {

struct AddrinfoDeleter {
  void operator()(addrinfo* list) const { freeaddrinfo(list); }
};
using Addrinfo = std::unique_ptr<addrinfo, AddrinfoDeleter>;

Addrinfo resolve(const HostPort& address, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* list = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) throw Error(fmt::format("{}: {}", to_string(address), gai_strerror(rc)));
  return Addrinfo(list);
}

Socket nonblocking_socket(const addrinfo& ai) {
  Socket s(socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (s.fd() < 0) throw Error(fmt::format("socket: {}", std::strerror(errno)));
  return s;
}

// Waits for `events` on the socket until `deadline`; false on timeout.
bool wait_for(const Socket& s, short events, Deadline deadline) {
  for (;;) {
    pollfd p{s.fd(), events, 0};
    const int rc = poll(&p, 1, poll_timeout_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw Error(fmt::format("poll: {}", std::strerror(errno)));
  }
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) close(fd_);
}

int poll_timeout_ms(Deadline deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

Socket connect_before(const HostPort& address, Deadline deadline) {
  const std::string where = fmt::format("connect to {}", to_string(address));
  Addrinfo list = [&] {
    try {
      return resolve(address, false);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", where, e.what()));
    }
  }();
  std::string why = "no address";
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    Socket s = nonblocking_socket(*ai);
    if (connect(s.fd(), ai->ai_addr, ai->ai_addrlen) == 0) return s;
    if (errno != EINPROGRESS) {
      why = std::strerror(errno);
      continue;
    }
    if (!wait_for(s, POLLOUT, deadline)) {
      why = "timed out";
      break;
    }
    int error = 0;
    socklen_t length = sizeof error;
    if (getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
    if (error == 0) return s;
    why = std::strerror(error);
  }
  throw Error(fmt::format("{}: {}", where, why));
}

void send_all_and_shutdown(const Socket& s, std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    const ssize_t n = send(s.fd(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(s, POLLOUT, deadline)) throw Error("send: timed out");
      continue;
    }
    throw Error(fmt::format("send: {}", std::strerror(errno)));
  }
  if (shutdown(s.fd(), SHUT_WR) != 0) throw Error(fmt::format("shutdown: {}", std::strerror(errno)));
}

std::string receive_all(const Socket& s, std::size_t max_bytes, Deadline deadline) {
  std::string data;
  char buffer[4096];
  for (;;) {
    const ssize_t n = recv(s.fd(), buffer, sizeof buffer, 0);
    if (n == 0) return data;
    if (n > 0) {
      data.append(buffer, static_cast<std::size_t>(n));
      if (data.size() > max_bytes) throw Error(fmt::format("receive: more than {} bytes", max_bytes));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(s, POLLIN, deadline)) throw Error("receive: timed out");
      continue;
    }
    throw Error(fmt::format("receive: {}", std::strerror(errno)));
  }
}

Socket listen_on(const HostPort& address, int backlog) {
  const std::string where = fmt::format("listen on {}", to_string(address));
  Addrinfo list = [&] {
    try {
      return resolve(address, true);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", where, e.what()));
    }
  }();
  std::string why = "no address";
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    Socket s = nonblocking_socket(*ai);
    const int on = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(s.fd(), ai->ai_addr, ai->ai_addrlen) == 0 && listen(s.fd(), backlog) == 0) return s;
    why = std::strerror(errno);
  }
  throw Error(fmt::format("{}: {}", where, why));
}

std::uint16_t local_port(const Socket& s) {
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  if (getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &length) != 0)
    throw Error(fmt::format("getsockname: {}", std::strerror(errno)));
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
}

std::string peer_name(const Socket& s) {
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  if (getpeername(s.fd(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) return {};
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), length, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return {};
  return addr.ss_family == AF_INET6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

}  // namespace morph::report
