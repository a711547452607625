// report_sink: a stand-in for morphd's report endpoint (tests/cli/morphd_report.bats).
//
//   report_sink --port-file FILE [--listen HOST:PORT] [--owner JOB=UID]... [--count N] [--timeout S]
//
// Writes the port it listens on to FILE, then prints one line per accepted iteration,
//   job=J step=S uid=U iteration=STEP seconds=X samples=N loss=L|- layout=LAYOUT
// and logs refusals on stderr. Exits 0 after N iterations (default 1), 1 at the timeout
// (default 30 s), 2 on usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>

#include "daemon/report/report_server.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

int main(int argc, char** argv) {
  using namespace morph;
  std::string listen = "127.0.0.1:0", port_file;
  std::map<std::uint32_t, uid_t> owners;
  std::size_t count = 1;
  double timeout_s = 30;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (i + 1 >= argc) throw Error(fmt::format("{} needs a value", flag));
      const std::string value = argv[++i];
      if (flag == "--listen") {
        listen = value;
      } else if (flag == "--port-file") {
        port_file = value;
      } else if (flag == "--owner") {
        const auto eq = value.find('=');
        if (eq == std::string::npos) throw Error("--owner: want JOB=UID");
        owners[static_cast<std::uint32_t>(parse_int(value.substr(0, eq), "--owner JOB", 1, 0xffffffffLL))] =
            static_cast<uid_t>(parse_int(value.substr(eq + 1), "--owner UID", 0, 0xfffffffeLL));
      } else if (flag == "--count") {
        count = static_cast<std::size_t>(parse_int(value, "--count", 1, 1 << 20));
      } else if (flag == "--timeout") {
        timeout_s = parse_double(value, "--timeout", 0.1, 3600);
      } else {
        throw Error(fmt::format("unknown option {}", quote(flag)));
      }
    }
    if (port_file.empty()) throw Error("--port-file is required");
    report::ReportServer server(listen, [&](std::uint32_t job) -> std::optional<uid_t> {
      const auto it = owners.find(job);
      return it == owners.end() ? std::nullopt : std::optional<uid_t>(it->second);
    });
    {
      std::ofstream out(port_file + ".tmp");
      out << server.port() << '\n';
    }
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
    std::size_t seen = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (seen < count) {
      if (std::chrono::steady_clock::now() >= end) return 1;
      server.poll_once(100, [&](uid_t uid, const report::ReportMessage& m) {
        for (const auto& it : m.iterations) {
          std::printf("job=%u step=%u uid=%u iteration=%llu seconds=%g samples=%llu loss=%s layout=%s\n", m.job_id,
                      m.step_id, static_cast<unsigned>(uid), static_cast<unsigned long long>(it.metrics.step),
                      it.metrics.seconds, static_cast<unsigned long long>(it.metrics.samples),
                      it.metrics.loss ? fmt::format("{}", *it.metrics.loss).c_str() : "-", it.layout.c_str());
          ++seen;
        }
        std::fflush(stdout);
      });
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_sink: %s\n", e.what());
    return 2;
  }
}
