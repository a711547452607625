// report_send HOST:PORT JOB: reports one iteration of job JOB with ReportClient, as the
// user running it (report_server_test.cc runs it as a second local user). Exit 0 when
// morphd accepted it, 1 when not (the client's one warning line says why), 2 on usage.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "daemon/report/report_client.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: report_send HOST:PORT JOB\n");
    return 2;
  }
  try {
    morph::report::ReportClient client(argv[1], static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10)), 0);
    client.queue({1, 0.5, 32, 2.5}, "dp=1,tp=1,pp=1,zero=0");
    return client.flush() && client.sent() == 1 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_send: %s\n", e.what());
    return 2;
  }
}
