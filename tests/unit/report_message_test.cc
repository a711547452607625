#include "daemon/report/report_message.h"

#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon/observations.h"
#include "libmorph/util/error.h"

namespace morph::report {
namespace {

using nlohmann::json;

ReportMessage sample() {
  ReportMessage m;
  m.job_id = 42;
  m.step_id = 3;
  m.sent_unix_s = 1795458740.25;
  m.iterations.push_back({{7, 0.5, 32, 3.25, std::nullopt}, "dp=2,tp=1,pp=1,zero=1"});
  m.iterations.push_back({{8, 0.25, 32, std::nullopt, std::nullopt}, "dp=2,tp=1,pp=1,zero=1"});
  return m;
}

json sample_json() { return json::parse(encode_report(sample())); }

std::string refusal(const std::string& text) {
  try {
    decode_report(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

std::string refusal_of_json(const json& j) { return refusal(j.dump()); }

TEST(ReportMessage, RoundTrip) {
  const ReportMessage m = decode_report(encode_report(sample()));
  EXPECT_EQ(m.job_id, 42u);
  EXPECT_EQ(m.step_id, 3u);
  EXPECT_DOUBLE_EQ(m.sent_unix_s, 1795458740.25);
  ASSERT_EQ(m.iterations.size(), 2u);
  EXPECT_EQ(m.iterations[0].metrics.step, 7u);
  EXPECT_DOUBLE_EQ(m.iterations[0].metrics.seconds, 0.5);
  EXPECT_EQ(m.iterations[0].metrics.samples, 32u);
  EXPECT_EQ(m.iterations[0].metrics.loss, 3.25);
  EXPECT_FALSE(m.iterations[1].metrics.loss.has_value());
  EXPECT_EQ(m.iterations[1].layout, "dp=2,tp=1,pp=1,zero=1");
  EXPECT_TRUE(sample_json()["iterations"][1]["loss"].is_null());
}

// What morphd records of a report: its iterations stamped with the time received, less
// those of unknown (0) samples, which the state database's CHECK would refuse with the
// whole batch.
TEST(ReportMessage, ObservationsLeaveOutIterationsOfUnknownSamples) {
  ReportMessage m = sample();
  m.iterations[0].metrics.samples = 0;
  const std::vector<store::Observation> o = daemon::observations_of(m, 1000.75);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].job_id, 42u);
  EXPECT_EQ(o[0].time, 1000);
  EXPECT_EQ(o[0].step, 8);
  EXPECT_DOUBLE_EQ(o[0].seconds, 0.25);
  EXPECT_EQ(o[0].samples, 32);
  EXPECT_EQ(o[0].layout, "dp=2,tp=1,pp=1,zero=1");
}

TEST(ReportMessage, AFullReportFitsTheByteBound) {
  ReportMessage m = sample();
  m.iterations.assign(kMaxIterationsPerReport,
                      {{(std::uint64_t{1} << 53), 1.2345678901234567e-05, (std::uint64_t{1} << 53), -1.2345678901234567e+299,
                        std::nullopt},
                       "dp=1024,tp=1024,pp=1,zero=3"});
  const std::string text = encode_report(m);
  EXPECT_LE(text.size(), kMaxReportBytes);
  EXPECT_EQ(decode_report(text).iterations.size(), kMaxIterationsPerReport);
}

TEST(ReportMessage, EncodeRefusesWhatTheServerWould) {
  ReportMessage m = sample();
  m.job_id = 0;
  EXPECT_THROW(encode_report(m), Error);
  m = sample();
  m.iterations.clear();
  EXPECT_THROW(encode_report(m), Error);
  m = sample();
  m.iterations.resize(kMaxIterationsPerReport + 1, m.iterations[0]);
  EXPECT_THROW(encode_report(m), Error);
  m = sample();
  m.iterations[0].layout = "dp=two";
  EXPECT_THROW(encode_report(m), Error);
  m = sample();
  m.iterations[0].metrics.seconds = 0;
  EXPECT_THROW(encode_report(m), Error);
}

TEST(ReportMessage, RefusesEveryMalformedReport) {
  EXPECT_EQ(refusal("not json"), "report: report: not JSON");
  EXPECT_EQ(refusal("[1]"), "report: report: not an object");
  EXPECT_EQ(refusal(std::string(kMaxReportBytes + 1, ' ')).rfind("report: report: 262145 bytes", 0), 0u);

  auto with = [](const std::string& pointer, const json& value) {
    json j = sample_json();
    j[json::json_pointer(pointer)] = value;
    return refusal_of_json(j);
  };
  auto without = [](const std::string& key) {
    json j = sample_json();
    j.erase(key);
    return refusal_of_json(j);
  };
  EXPECT_EQ(with("/extra", 1), "report: report: unknown key 'extra'");
  EXPECT_EQ(without("job"), "report: report: missing key 'job'");
  EXPECT_EQ(without("iterations"), "report: report: missing key 'iterations'");
  EXPECT_EQ(with("/v", 2), "report: v: version 2 is not 1");
  EXPECT_EQ(with("/job", 0), "report: job: 0 is not in [1, 4294967295]");
  EXPECT_EQ(with("/job", -1), "report: job: not a non-negative integer");
  EXPECT_EQ(with("/job", "42"), "report: job: not a non-negative integer");
  EXPECT_EQ(with("/job", 4294967296LL), "report: job: 4294967296 is not in [1, 4294967295]");
  EXPECT_EQ(with("/step", 1.5), "report: step: not a non-negative integer");
  EXPECT_EQ(with("/sent", "now"), "report: sent: not a number");
  EXPECT_EQ(with("/sent", -1), "report: sent: -1 is not in [0, 100000000000]");
  EXPECT_EQ(with("/iterations", json::object()), "report: iterations: not an array");
  EXPECT_EQ(with("/iterations", json::array()), "report: iterations: empty");
  json many = sample_json();
  for (std::size_t i = 0; i < kMaxIterationsPerReport; ++i) many["iterations"].push_back(many["iterations"][0]);
  EXPECT_EQ(refusal_of_json(many), "report: iterations: 1026 iterations, at most 1024 per report");
  EXPECT_EQ(with("/iterations/0", 1), "report: iterations[0]: not an object");
  EXPECT_EQ(with("/iterations/1/rank", 0), "report: iterations[1]: unknown key 'rank'");
  json no_loss = sample_json();
  no_loss["iterations"][0].erase("loss");
  EXPECT_EQ(refusal_of_json(no_loss), "report: iterations[0]: missing key 'loss'");
  EXPECT_EQ(with("/iterations/0/step", -3), "report: iterations[0].step: not a non-negative integer");
  EXPECT_EQ(with("/iterations/0/seconds", 0), "report: iterations[0].seconds: 0 is not in [1e-09, 10000000]");
  EXPECT_EQ(with("/iterations/0/seconds", 1e8), "report: iterations[0].seconds: 100000000 is not in [1e-09, 10000000]");
  EXPECT_EQ(with("/iterations/0/samples", 0.5), "report: iterations[0].samples: not a non-negative integer");
  EXPECT_EQ(with("/iterations/0/loss", "low"), "report: iterations[0].loss: not a number");
  EXPECT_EQ(with("/iterations/0/layout", 3), "report: iterations[0].layout: not a string");
  EXPECT_EQ(with("/iterations/0/layout", std::string(65, 'd')), "report: iterations[0].layout: longer than 64 characters");
  EXPECT_NE(with("/iterations/0/layout", "dp=0,tp=1").find("report: iterations[0].layout: layout"), std::string::npos)
      << with("/iterations/0/layout", "dp=0,tp=1");
  // NaN and infinity are no JSON, and the parser refuses a number that overflows a double.
  EXPECT_EQ(refusal(R"({"v":1,"job":1,"step":0,"sent":1,"iterations":[{"step":1,"seconds":1e999,"samples":1,"loss":null,"layout":"dp=1,tp=1,pp=1,zero=0"}]})"),
            "report: report: not JSON");
  EXPECT_EQ(refusal(R"({"v":1,"job":1,"step":0,"sent":1,"iterations":[{"step":1,"seconds":NaN,"samples":1,"loss":null,"layout":"dp=1,tp=1,pp=1,zero=0"}]})"),
            "report: report: not JSON");
}

}  // namespace
}  // namespace morph::report
