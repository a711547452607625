// What morphd uses to receive iteration reports: a listening TCP socket served by
// poll_once(). Each connection carries one munge credential (read to EOF, at most
// max_credential_bytes, within read_timeout_s) whose payload is a ReportMessage. A report
// reaches the handler only when munge vouches for its sender and owner_of(job) is that
// sender's uid; everything else is refused, counted, logged with its reason and answered
// "refused: REASON" (the client drops it). What cannot be taken now (too many clients,
// munged not answering, a lookup that throws, a handler that throws: the state database
// full or busy) is answered "unavailable: REASON", and the client keeps it for its next
// flush. Connections are served side by side, so a slow
// client holds up no other. Single-threaded: call poll_once from one thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/report/report_message.h"
#include "daemon/report/tcp_socket.h"
#include "libmorph/util/error.h"

namespace morph::report {

enum class Refusal {
  bad_credential,    // munge refused it (invalid, bad key, wrong realm, ...)
  replayed,          // munge has seen this credential before
  expired,           // munge: expired, or created in the future
  malformed,         // the payload is no valid ReportMessage
  unknown_job,       // owner_of(job) has no answer
  not_owner,         // the credential's uid does not own the job
  oversized,         // more than max_credential_bytes
  timed_out,         // the client did not finish within read_timeout_s
};
inline constexpr std::size_t kRefusalKinds = 8;
static_assert(static_cast<std::size_t>(Refusal::timed_out) + 1 == kRefusalKinds);

std::string_view to_string(Refusal refusal);

// Thrown by an OwnerLookup or a ReportHandler for a report that cannot be taken now
// (slurmctld does not answer, the job is not recorded yet): nothing is refused.
class ReportDeferred : public Error {
 public:
  using Error::Error;
};

struct ReportServerStats {
  std::size_t accepted = 0;
  std::size_t deferred = 0;  // answered "unavailable": the client sends them again
  std::array<std::size_t, kRefusalKinds> refused{};
  std::size_t refusals(Refusal r) const { return refused[static_cast<std::size_t>(r)]; }
};

struct ReportServerOptions {
  std::size_t max_credential_bytes = 512 * 1024;  // a full report is about 128 KiB of JSON
  double read_timeout_s = 2;
  std::size_t max_connections = 64;
  // From one host: the rest stay for the others' reports (64 idle connections from one
  // host deferred every report for 2 s at a time, before any authentication).
  std::size_t max_connections_per_host = 8;
  int backlog = 64;
  // One line per refusal ("report from PEER: refused: REASON"); default: stderr, "morphd: ".
  std::function<void(const std::string& line)> log;
  bool IsValid(std::string* error) const;
};

// Who owns a job (morphd asks Slurm); nullopt for a job it does not know, ReportDeferred
// (or any exception) when it cannot tell now.
using OwnerLookup = std::function<std::optional<uid_t>(std::uint32_t job_id)>;
// An accepted report and the uid munge vouched for; it throws when it cannot keep it now.
using ReportHandler = std::function<void(uid_t uid, const ReportMessage& message)>;

class ReportServer {
 public:
  // `bind_address` is HOST:PORT (port 0: any free port, see port()). Throws morph::Error.
  ReportServer(std::string_view bind_address, OwnerLookup owner_of, ReportServerOptions options = {});

  std::uint16_t port() const;

  // Waits at most timeout_ms for connections and data, then serves what arrived: accepts
  // connections, reads, and decides every credential that is complete or out of time.
  // Returns the number of reports handed to `handler`. Throws only when the listening
  // socket itself fails.
  std::size_t poll_once(int timeout_ms, const ReportHandler& handler);

  const ReportServerStats& stats() const { return stats_; }
  std::size_t open_connections() const { return connections_.size(); }

 private:
  struct Connection {
    Socket socket;
    std::string peer;
    std::string data;
    Deadline deadline;
    bool done = false;
  };

  void accept_all();
  // Reads what is there; true when the connection is finished (EOF, error or refused).
  bool read_some(Connection& c, const ReportHandler& handler, std::size_t& delivered);
  // Decodes and checks a complete credential; answers the client.
  bool decide(Connection& c, const ReportHandler& handler);
  void refuse(Connection& c, Refusal refusal, const std::string& reason);
  void defer(Connection& c, const std::string& reason);

  OwnerLookup owner_of_;
  ReportServerOptions options_;
  Socket listener_;
  std::vector<Connection> connections_;
  ReportServerStats stats_;
};

}  // namespace morph::report
