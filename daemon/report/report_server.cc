#include "daemon/report/report_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "daemon/report/munge_credential.h"
#include "libmorph/util/error.h"

namespace morph::report {
namespace {

// "10.0.0.7" of peer_name()'s "10.0.0.7:40112" ("[::1]" of "[::1]:40112").
std::string host_of(const std::string& peer) { return peer.substr(0, peer.rfind(':')); }

Deadline deadline_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// The answer is best effort: a client that does not read it misses only the answer.
void answer(const Socket& socket, const std::string& line) {
  const std::string text = line + "\n";
  (void)send(socket.fd(), text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

Refusal refusal_of(munge_err_t code) {
  switch (code) {
    case EMUNGE_CRED_REPLAYED: return Refusal::replayed;
    case EMUNGE_CRED_EXPIRED:
    case EMUNGE_CRED_REWOUND: return Refusal::expired;
    default: return Refusal::bad_credential;
  }
}

}  // namespace

std::string_view to_string(Refusal refusal) {
  switch (refusal) {
    case Refusal::bad_credential: return "bad-credential";
    case Refusal::replayed: return "replayed";
    case Refusal::expired: return "expired";
    case Refusal::malformed: return "malformed";
    case Refusal::unknown_job: return "unknown-job";
    case Refusal::not_owner: return "not-owner";
    case Refusal::oversized: return "oversized";
    case Refusal::timed_out: return "timed-out";
  }
  return "unknown";
}

bool ReportServerOptions::IsValid(std::string* error) const {
  if (max_credential_bytes < 64) *error = fmt::format("max_credential_bytes {} is below 64", max_credential_bytes);
  else if (!(read_timeout_s > 0 && read_timeout_s <= 600)) *error = fmt::format("read_timeout_s {} is not in (0, 600]", read_timeout_s);
  else if (max_connections == 0) *error = "max_connections is 0";
  else if (max_connections_per_host == 0) *error = "max_connections_per_host is 0";
  else if (backlog < 1) *error = fmt::format("backlog {} is below 1", backlog);
  else return true;
  return false;
}

ReportServer::ReportServer(std::string_view bind_address, OwnerLookup owner_of, ReportServerOptions options)
    : owner_of_(std::move(owner_of)), options_(std::move(options)) {
  std::string error;
  if (!options_.IsValid(&error)) throw Error(fmt::format("report server: {}", error));
  if (!owner_of_) throw Error("report server: no owner lookup");
  if (!options_.log)
    options_.log = [](const std::string& line) { std::fprintf(stderr, "morphd: %s\n", line.c_str()); };
  listener_ = listen_on(parse_host_port(bind_address, "MorphdAddress", true), options_.backlog);
}

std::uint16_t ReportServer::port() const { return local_port(listener_); }

std::size_t ReportServer::poll_once(int timeout_ms, const ReportHandler& handler) {
  int wait_ms = std::max(0, timeout_ms);
  std::vector<pollfd> fds;
  fds.push_back({listener_.fd(), POLLIN, 0});
  for (const Connection& c : connections_) {
    fds.push_back({c.socket.fd(), POLLIN, 0});
    wait_ms = std::min(wait_ms, poll_timeout_ms(c.deadline));
  }
  if (poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR)
    throw Error(fmt::format("report server: poll: {}", std::strerror(errno)));

  // New connections are read at once: a client's credential is often there already.
  const std::size_t polled = connections_.size();
  if (fds[0].revents & POLLIN) accept_all();
  std::size_t delivered = 0;
  for (std::size_t i = 0; i < connections_.size(); ++i) {
    Connection& c = connections_[i];
    if (i >= polled || fds[i + 1].revents != 0) c.done = read_some(c, handler, delivered);
    if (!c.done && std::chrono::steady_clock::now() >= c.deadline) {
      refuse(c, Refusal::timed_out,
             fmt::format("no complete credential within {} s ({} bytes)", options_.read_timeout_s, c.data.size()));
    }
  }
  std::erase_if(connections_, [](const Connection& c) { return c.done; });
  return delivered;
}

void ReportServer::accept_all() {
  for (;;) {
    Socket socket(accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (socket.fd() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: none left; EMFILE and the like: the next poll tries again
    }
    Connection c{std::move(socket), {}, {}, deadline_after(options_.read_timeout_s)};
    c.peer = peer_name(c.socket);
    if (connections_.size() >= options_.max_connections) {
      defer(c, fmt::format("{} connections already open", connections_.size()));
      continue;
    }
    const std::string host = host_of(c.peer);
    const auto from_host = std::count_if(connections_.begin(), connections_.end(),
                                         [&](const Connection& o) { return host_of(o.peer) == host; });
    if (static_cast<std::size_t>(from_host) >= options_.max_connections_per_host) {
      defer(c, fmt::format("{} connections already open from {}", from_host, host.empty() ? "?" : host));
      continue;
    }
    connections_.push_back(std::move(c));
  }
}

bool ReportServer::read_some(Connection& c, const ReportHandler& handler, std::size_t& delivered) {
  char buffer[16384];
  for (;;) {
    const ssize_t n = recv(c.socket.fd(), buffer, sizeof buffer, 0);
    if (n > 0) {
      if (c.data.size() + static_cast<std::size_t>(n) > options_.max_credential_bytes) {
        refuse(c, Refusal::oversized, fmt::format("more than {} bytes", options_.max_credential_bytes));
        return true;
      }
      c.data.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) {
      if (decide(c, handler)) ++delivered;
      return true;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    options_.log(fmt::format("report from {}: {}", c.peer, std::strerror(errno)));
    return true;  // the client went away: nothing to answer
  }
}

bool ReportServer::decide(Connection& c, const ReportHandler& handler) {
  while (!c.data.empty() && (c.data.back() == '\n' || c.data.back() == '\r')) c.data.pop_back();
  MungeDecoded credential;
  try {
    credential = munge_decode_credential(c.data);
  } catch (const MungeError& e) {
    if (e.unavailable()) defer(c, e.what());
    else refuse(c, refusal_of(e.code()), e.what());
    return false;
  }
  ReportMessage message;
  try {
    message = decode_report(credential.payload);
  } catch (const Error& e) {
    refuse(c, Refusal::malformed, fmt::format("from uid {}: {}", credential.uid, e.what()));
    return false;
  }
  std::optional<uid_t> owner;
  try {
    owner = owner_of_(message.job_id);
  } catch (const std::exception& e) {
    defer(c, fmt::format("job {}: owner lookup failed: {}", message.job_id, e.what()));
    return false;
  }
  if (!owner) {
    refuse(c, Refusal::unknown_job, fmt::format("unknown job {}", message.job_id));
    return false;
  }
  if (*owner != credential.uid) {
    refuse(c, Refusal::not_owner, fmt::format("uid {} does not own job {}", credential.uid, message.job_id));
    return false;
  }
  try {
    handler(credential.uid, message);
  } catch (const std::exception& e) {  // the state database full or busy: nothing wrong with the report
    defer(c, fmt::format("job {}: {}", message.job_id, e.what()));
    return false;
  }
  ++stats_.accepted;
  answer(c.socket, "ok");
  c.done = true;
  return true;
}

void ReportServer::refuse(Connection& c, Refusal refusal, const std::string& reason) {
  ++stats_.refused[static_cast<std::size_t>(refusal)];
  options_.log(fmt::format("report from {}: refused ({}): {}", c.peer.empty() ? "?" : c.peer, to_string(refusal), reason));
  answer(c.socket, "refused: " + reason);
  c.done = true;
}

void ReportServer::defer(Connection& c, const std::string& reason) {
  ++stats_.deferred;
  options_.log(fmt::format("report from {}: not taken now: {}", c.peer.empty() ? "?" : c.peer, reason));
  answer(c.socket, "unavailable: " + reason);
  c.done = true;
}

}  // namespace morph::report
