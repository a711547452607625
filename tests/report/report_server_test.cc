// ReportServer and ReportClient in one process, over TCP on 127.0.0.1, with the real
// munged: what is accepted, every refusal, a slow client beside a fast one, and (as root)
// a second local user reporting for a job that is not theirs.
#include "daemon/report/report_server.h"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/report/munge_credential.h"
#include "daemon/report/report_client.h"
#include "tests/unit/munge_support.h"

namespace morph::report {
namespace {

using namespace std::chrono_literals;
using Owners = std::map<std::uint32_t, uid_t>;

constexpr std::uint32_t kJob = 42;

Deadline in_seconds(double s) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// A ReportServer served by its own thread; what it accepted and logged, read after stop().
class Server {
 public:
  // The owner of a job in `unavailable` cannot be told now (ReportDeferred).
  // The handler cannot keep the reports of the jobs in `unkept` (the state database full).
  explicit Server(Owners owners, ReportServerOptions options = {}, std::set<std::uint32_t> unavailable = {},
                  std::set<std::uint32_t> unkept = {})
      : owners_(std::move(owners)), unavailable_(std::move(unavailable)), unkept_(std::move(unkept)) {
    options.log = [this](const std::string& line) {
      std::lock_guard lock(mutex_);
      log_.push_back(line);
    };
    server_ = std::make_unique<ReportServer>(
        "127.0.0.1:0",
        [this](std::uint32_t job) -> std::optional<uid_t> {
          if (unavailable_.count(job) != 0) throw ReportDeferred("slurmctld did not answer who owns it");
          const auto it = owners_.find(job);
          return it == owners_.end() ? std::nullopt : std::optional<uid_t>(it->second);
        },
        options);
    port_ = server_->port();
    thread_ = std::thread([this] {
      while (!stop_) server_->poll_once(20, [this](uid_t uid, const ReportMessage& m) {
        if (unkept_.count(m.job_id) != 0) throw Error("database or disk is full");
        std::lock_guard lock(mutex_);
        accepted_.emplace_back(uid, m);
      });
    });
  }
  ~Server() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::string address() const { return fmt::format("127.0.0.1:{}", port_); }
  std::uint16_t port() const { return port_; }
  const ReportServerStats& stats() const { return server_->stats(); }  // after stop()
  std::vector<std::pair<uid_t, ReportMessage>> accepted() {
    std::lock_guard lock(mutex_);
    return accepted_;
  }
  std::string log() {
    std::lock_guard lock(mutex_);
    std::string all;
    for (const auto& line : log_) all += line + "\n";
    return all;
  }

 private:
  std::map<std::uint32_t, uid_t> owners_;
  std::set<std::uint32_t> unavailable_;
  std::set<std::uint32_t> unkept_;
  std::unique_ptr<ReportServer> server_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::pair<uid_t, ReportMessage>> accepted_;
  std::vector<std::string> log_;
};

// Sends `data` as one connection and returns the server's answer line.
std::string send_raw(std::uint16_t port, const std::string& data) {
  const Deadline deadline = in_seconds(5);
  const Socket socket = connect_before({"127.0.0.1", port}, deadline);
  send_all_and_shutdown(socket, data, deadline);
  std::string answer = receive_all(socket, 4096, deadline);
  if (!answer.empty() && answer.back() == '\n') answer.pop_back();
  return answer;
}

ReportMessage one_iteration(std::uint32_t job) {
  ReportMessage m;
  m.job_id = job;
  m.sent_unix_s = 1e9;
  m.iterations.push_back({{1, 0.5, 32, 2.5, std::nullopt}, "dp=1,tp=1,pp=1,zero=0"});
  return m;
}

TEST(ReportServer, TheOwnersIterationsAreAccepted) {
  MORPH_REQUIRE_MUNGED();
  Server server(Owners{{kJob, getuid()}});
  ReportClient client(server.address(), kJob, 3);
  client.queue({7, 0.5, 32, 3.25}, "dp=2,tp=1,pp=1,zero=1");
  client.queue({8, 0.25, 32, std::nullopt}, "dp=2,tp=1,pp=1,zero=1");
  EXPECT_TRUE(client.flush());
  EXPECT_EQ(client.sent(), 2u);
  EXPECT_EQ(client.pending(), 0u);
  server.stop();
  const auto accepted = server.accepted();
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].first, getuid());
  EXPECT_EQ(accepted[0].second.job_id, kJob);
  EXPECT_EQ(accepted[0].second.step_id, 3u);
  ASSERT_EQ(accepted[0].second.iterations.size(), 2u);
  EXPECT_EQ(accepted[0].second.iterations[1].metrics.step, 8u);
  EXPECT_EQ(server.stats().accepted, 1u);
}

TEST(ReportServer, ALargeBacklogGoesInSeveralReports) {
  MORPH_REQUIRE_MUNGED();
  Server server(Owners{{kJob, getuid()}});
  ReportClient client(server.address(), kJob, 0, {2, 5000});
  for (std::uint64_t i = 0; i < 2 * kMaxIterationsPerReport + 5; ++i) client.queue({i, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  EXPECT_TRUE(client.flush());
  server.stop();
  EXPECT_EQ(server.stats().accepted, 3u);
  EXPECT_EQ(client.sent(), 2 * kMaxIterationsPerReport + 5);
}

TEST(ReportServer, AnotherUsersJobAndAnUnknownJobAreRefused) {
  MORPH_REQUIRE_MUNGED();
  Server server(Owners{{kJob, getuid() + 1}});
  ReportClient theirs(server.address(), kJob, 0);
  theirs.queue({1, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  testing::internal::CaptureStderr();
  EXPECT_TRUE(theirs.flush());  // refused reports are dropped, not retried
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(theirs.sent(), 0u);
  EXPECT_EQ(theirs.dropped(), 1u);
  EXPECT_NE(warning.find(fmt::format("morphd refused the report: uid {} does not own job {}", getuid(), kJob)),
            std::string::npos)
      << warning;
  EXPECT_EQ(send_raw(server.port(), munge_encode_payload(encode_report(one_iteration(7)))), "refused: unknown job 7");
  server.stop();
  EXPECT_TRUE(server.accepted().empty());
  EXPECT_EQ(server.stats().refusals(Refusal::not_owner), 1u);
  EXPECT_EQ(server.stats().refusals(Refusal::unknown_job), 1u);
  EXPECT_NE(server.log().find(fmt::format("refused (not-owner): uid {} does not own job {}", getuid(), kJob)),
            std::string::npos)
      << server.log();
}

// What cannot be taken now is not refused: morphrun keeps it for its next flush.
TEST(ReportServer, AReportThatCannotBeTakenNowStaysWithTheClient) {
  MORPH_REQUIRE_MUNGED();
  Server server(Owners{}, {}, {kJob});
  ReportClient client(server.address(), kJob, 0);
  client.queue({1, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(client.flush());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(client.pending(), 1u);
  EXPECT_EQ(client.dropped(), 0u);
  EXPECT_NE(warning.find("morphd cannot take the report now: job 42: owner lookup failed: slurmctld did not "
                         "answer who owns it"),
            std::string::npos)
      << warning;
  server.stop();
  EXPECT_TRUE(server.accepted().empty());
  EXPECT_EQ(server.stats().deferred, 1u);
  for (std::size_t kind = 0; kind < kRefusalKinds; ++kind) EXPECT_EQ(server.stats().refused[kind], 0u) << kind;
  EXPECT_NE(server.log().find("not taken now: job 42: owner lookup failed"), std::string::npos) << server.log();
}

// A report the state database cannot keep now is not lost: the client sends it again.
TEST(ReportServer, AReportTheHandlerCannotKeepStaysWithTheClient) {
  MORPH_REQUIRE_MUNGED();
  Server server(Owners{{kJob, getuid()}}, {}, {}, {kJob});
  ReportClient client(server.address(), kJob, 0);
  client.queue({1, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(client.flush());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(client.pending(), 1u);
  EXPECT_EQ(client.dropped(), 0u);
  EXPECT_NE(warning.find("job 42: database or disk is full"), std::string::npos) << warning;
  server.stop();
  EXPECT_EQ(server.stats().deferred, 1u);
  for (std::size_t kind = 0; kind < kRefusalKinds; ++kind) EXPECT_EQ(server.stats().refused[kind], 0u) << kind;
}

// munged down or restarting says nothing about the credential; a bad one is refused.
TEST(MungeError, OnlyMungedsOwnTroubleIsUnavailable) {
  for (munge_err_t code : {EMUNGE_SOCKET, EMUNGE_TIMEOUT, EMUNGE_NO_MEMORY, EMUNGE_SNAFU})
    EXPECT_TRUE(MungeError(code, "munged").unavailable()) << code;
  for (munge_err_t code : {EMUNGE_CRED_INVALID, EMUNGE_BAD_CRED, EMUNGE_CRED_REPLAYED, EMUNGE_CRED_EXPIRED,
                           EMUNGE_CRED_UNAUTHORIZED, EMUNGE_BAD_REALM})
    EXPECT_FALSE(MungeError(code, "munged").unavailable()) << code;
}

TEST(ReportServer, AReplayedCredentialIsRefused) {
  MORPH_REQUIRE_MUNGED();
  Server server(Owners{{kJob, getuid()}});
  const std::string credential = munge_encode_payload(encode_report(one_iteration(kJob)));
  EXPECT_EQ(send_raw(server.port(), credential), "ok");
  EXPECT_EQ(send_raw(server.port(), credential), "refused: munge decode: Replayed credential");
  server.stop();
  EXPECT_EQ(server.accepted().size(), 1u);
  EXPECT_EQ(server.stats().refusals(Refusal::replayed), 1u);
}

TEST(ReportServer, MalformedBadAndOversizedCredentialsAreRefused) {
  MORPH_REQUIRE_MUNGED();
  ReportServerOptions options;
  options.max_credential_bytes = 4096;
  Server server(Owners{{kJob, getuid()}}, options);
  EXPECT_EQ(send_raw(server.port(), munge_encode_payload(R"({"v":1})")),
            fmt::format("refused: from uid {}: report: report: missing key 'iterations'", getuid()));
  const std::string bad = send_raw(server.port(), "MUNGE:not-a-credential:");
  EXPECT_EQ(bad.rfind("refused: munge decode: ", 0), 0u) << bad;
  // The server stops reading at the bound; the client may see its answer or a reset.
  try {
    send_raw(server.port(), std::string(8192, 'A'));
  } catch (const Error&) {
  }
  server.stop();
  EXPECT_TRUE(server.accepted().empty());
  EXPECT_EQ(server.stats().refusals(Refusal::malformed), 1u);
  EXPECT_EQ(server.stats().refusals(Refusal::bad_credential), 1u);
  EXPECT_EQ(server.stats().refusals(Refusal::oversized), 1u);
}

TEST(ReportServer, ASlowClientDoesNotHoldUpAnother) {
  MORPH_REQUIRE_MUNGED();
  ReportServerOptions options;
  options.read_timeout_s = 1.5;
  Server server(Owners{{kJob, getuid()}}, options);
  const Socket slow = connect_before({"127.0.0.1", server.port()}, in_seconds(2));
  const std::string partial = munge_encode_payload(encode_report(one_iteration(kJob))).substr(0, 20);
  ASSERT_EQ(send(slow.fd(), partial.data(), partial.size(), MSG_NOSIGNAL), static_cast<ssize_t>(partial.size()));

  const auto start = std::chrono::steady_clock::now();
  ReportClient fast(server.address(), kJob, 0);
  fast.queue({1, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  EXPECT_TRUE(fast.flush());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);  // well before the slow one times out

  const std::string answer = receive_all(slow, 4096, in_seconds(5));
  EXPECT_EQ(answer, "refused: no complete credential within 1.5 s (20 bytes)\n");
  server.stop();
  EXPECT_EQ(server.stats().accepted, 1u);
  EXPECT_EQ(server.stats().refusals(Refusal::timed_out), 1u);
}

// Idle connections from one host take at most its share of the slots: a security review's
// 64 from one host deferred every other host's reports, before any authentication.
TEST(ReportServer, OneHostsIdleConnectionsLeaveTheOthersTheirSlots) {
  ReportServerOptions options;
  options.read_timeout_s = 3;
  options.max_connections_per_host = 2;
  Server server(Owners{{kJob, getuid()}}, options);
  std::vector<Socket> idle;
  for (int i = 0; i < 2; ++i) idle.push_back(connect_before({"127.0.0.1", server.port()}, in_seconds(2)));
  std::this_thread::sleep_for(200ms);  // accepted
  const Socket third = connect_before({"127.0.0.1", server.port()}, in_seconds(2));
  EXPECT_EQ(receive_all(third, 4096, in_seconds(3)), "unavailable: 2 connections already open from 127.0.0.1\n");
  idle.clear();
  server.stop();
  EXPECT_NE(server.log().find("not taken now: 2 connections already open from 127.0.0.1"), std::string::npos)
      << server.log();
}

TEST(ReportClient, AnUnreachableMorphdKeepsTheNewestIterationsAndWarnsOnce) {
  // A port nobody listens on: bind one, then close it.
  std::uint16_t port = 0;
  {
    const Socket s = listen_on({"127.0.0.1", 0}, 1);
    port = local_port(s);
  }
  ReportClient client(fmt::format("127.0.0.1:{}", port), kJob, 0, {0.5, 3});
  for (std::uint64_t i = 0; i < 5; ++i) client.queue({i, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(client.flush());
  EXPECT_FALSE(client.flush());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(client.pending(), 3u);
  EXPECT_EQ(client.dropped(), 2u);
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
  EXPECT_NE(warning.find(fmt::format("morphrun: MorphdAddress=127.0.0.1:{}: ", port)), std::string::npos) << warning;
}

// Review of the report path: an iteration the report cannot hold (a count past 2^53, which
// a metrics line takes up to 2^63 - 1) made encode_report() refuse its whole batch, and
// up to 1,024 good iterations were dropped with it. It is dropped alone, when queued.
TEST(ReportClient, AnIterationTheReportCannotHoldIsDroppedAlone) {
  ReportClient client("127.0.0.1:1", kJob, 0);
  testing::internal::CaptureStderr();
  client.queue({1, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  client.queue({(std::uint64_t{1} << 53) + 1, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  client.queue({3, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  client.queue({4, 0.5, 32, {}}, "dp=1,tp=1,pp=1,zero=0");
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(client.pending(), 3u);
  EXPECT_EQ(client.dropped(), 1u);
  EXPECT_NE(warning.find("report: iteration.step: 9007199254740993 is not in [0, 9007199254740992]"),
            std::string::npos)
      << warning;
  ReportMessage m = one_iteration(kJob);
  m.iterations.assign(3, m.iterations.front());
  EXPECT_NO_THROW(encode_report(m));  // what stays pending is sent whole
}

// Runs `command` and returns its exit status (-1 when it did not exit).
int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ReportServer, ASecondLocalUserCannotReportForAnotherUsersJob) {
  MORPH_REQUIRE_MUNGED();
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create and run as the user morphtest";
  if (run("command -v runuser >/dev/null && (id morphtest >/dev/null 2>&1 || useradd -M -r morphtest)") != 0)
    GTEST_SKIP() << "cannot create the user morphtest (useradd -M -r morphtest)";
  const passwd* other = getpwnam("morphtest");
  ASSERT_NE(other, nullptr);
  const uid_t other_uid = other->pw_uid;
  Server server(Owners{{kJob, getuid()}, {kJob + 1, other_uid}});
  const std::string send = fmt::format("runuser -u morphtest -- {} {}", MORPH_REPORT_SEND, server.address());
  EXPECT_EQ(run(fmt::format("{} {} 2>/dev/null", send, kJob)), 1) << "morphtest reported for root's job";
  EXPECT_EQ(run(fmt::format("{} {}", send, kJob + 1)), 0) << "morphtest could not report for its own job";
  server.stop();
  const auto accepted = server.accepted();
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].first, other_uid);
  EXPECT_EQ(accepted[0].second.job_id, kJob + 1);
  EXPECT_EQ(server.stats().refusals(Refusal::not_owner), 1u);
  EXPECT_NE(server.log().find(fmt::format("uid {} does not own job {}", other_uid, kJob)), std::string::npos)
      << server.log();
}

}  // namespace
}  // namespace morph::report
