#include "daemon/report/report_client.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "daemon/report/munge_credential.h"
#include "daemon/report/tcp_socket.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::report {
namespace {

constexpr std::size_t kMaxAnswerBytes = 1024;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

bool ReportClientOptions::IsValid(std::string* error) const {
  if (!(timeout_s > 0 && timeout_s <= 60)) {
    *error = fmt::format("timeout_s {} is not in (0, 60]", timeout_s);
    return false;
  }
  if (max_pending == 0) {
    *error = "max_pending is 0";
    return false;
  }
  return true;
}

ReportClient::ReportClient(std::string_view address, std::uint32_t job_id, std::uint32_t step_id,
                           ReportClientOptions options)
    : address_(parse_host_port(address, "MorphdAddress")), job_id_(job_id), step_id_(step_id), options_(options) {
  std::string error;
  if (!options_.IsValid(&error)) throw Error(fmt::format("report client: {}", error));
  if (job_id_ == 0) throw Error("report client: job id 0 (not in a Slurm job)");
}

void ReportClient::queue(const launch::IterationMetrics& metrics, std::string_view layout) {
  ReportedIteration iteration{metrics, std::string(layout)};
  try {  // one the report cannot hold is dropped alone, not with the batch it would join
    check_iteration(iteration);
  } catch (const Error& e) {
    ++dropped_;
    warn_once(e.what());
    return;
  }
  pending_.push_back(std::move(iteration));
  while (pending_.size() > options_.max_pending) {
    pending_.pop_front();
    ++dropped_;
  }
}

bool ReportClient::flush() noexcept {
  try {
    while (!pending_.empty()) {
      ReportMessage message;
      message.job_id = job_id_;
      message.step_id = step_id_;
      message.sent_unix_s = unix_now();
      const std::size_t n = std::min(pending_.size(), kMaxIterationsPerReport);
      message.iterations.assign(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
      bool refused = false;
      const std::string why = send_batch(message, refused);
      if (!why.empty() && !refused) {
        warn_once(why);
        return false;
      }
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
      if (refused) {
        dropped_ += n;
        warn_once(why);
      } else {
        sent_ += n;
      }
    }
    return true;
  } catch (const std::exception& e) {
    warn_once(e.what());
  } catch (...) {
    warn_once("unknown error");
  }
  return false;
}

std::string ReportClient::send_batch(const ReportMessage& message, bool& refused) {
  refused = false;
  std::string payload;
  try {
    payload = encode_report(message);
  } catch (const Error& e) {
    refused = true;  // a batch the server would refuse too (a bad layout): drop it
    return e.what();
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(options_.timeout_s));
  try {
    // Connect before asking munged for a credential: an unreachable morphd then costs
    // one refused connection, not a munge round trip (or munged's own timeout) as well.
    const Socket socket = connect_before(address_, deadline);
    send_all_and_shutdown(socket, munge_encode_payload(payload), deadline);
    std::string answer = receive_all(socket, kMaxAnswerBytes, deadline);
    while (!answer.empty() && (answer.back() == '\n' || answer.back() == '\r')) answer.pop_back();
    if (answer == "ok") return {};
    if (answer.rfind("refused: ", 0) == 0) {
      refused = true;
      return fmt::format("morphd refused the report: {}", answer.substr(9));
    }
    if (answer.rfind("unavailable: ", 0) == 0)  // kept for the next flush
      return fmt::format("morphd cannot take the report now: {}", answer.substr(13));
    return answer.empty() ? std::string("morphd closed the connection without an answer")
                          : fmt::format("morphd answered {}", quote(answer));
  } catch (const MungeError& e) {
    return e.what();  // munged unreachable: keep the batch for the next try
  } catch (const Error& e) {
    return e.what();
  }
}

void ReportClient::warn_once(const std::string& why) {
  if (warned_) return;
  warned_ = true;
  std::fprintf(stderr, "morphrun: MorphdAddress=%s: %s (reported once; the trainer runs on)\n",
               to_string(address_).c_str(), why.c_str());
}

}  // namespace morph::report
