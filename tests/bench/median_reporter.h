// The console report of Google Benchmark, keeping each benchmark's median so that a
// bench program can end with the summary lines its make target promises, and the main
// of every bench program up to those lines (run_benchmarks).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace morph::bench {

class MedianReporter : public benchmark::ConsoleReporter {
 public:
  // No colour codes when the output goes to a log (--benchmark_color does not reach a
  // reporter of our own).
  MedianReporter() : ConsoleReporter(isatty(fileno(stdout)) ? OO_Defaults : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs)
      if (run.aggregate_name == "median") {
        std::string name = run.run_name.function_name;
        if (!run.run_name.args.empty()) name += "/" + run.run_name.args;
        medians_ms[name] = run.GetAdjustedRealTime() * 1e3 / benchmark::GetTimeUnitMultiplier(run.time_unit);
      }
    ConsoleReporter::ReportRuns(runs);
  }

  std::map<std::string, double> medians_ms;  // by function name and arguments ("BM_X/64/30")
};

// Runs the benchmarks the command line selects and returns their medians in ms, by name
// and arguments; nullopt (the program should exit 1) on an argument Google Benchmark
// does not know, which it has reported.
inline std::optional<std::map<std::string, double>> run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return std::nullopt;
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return reporter.medians_ms;
}

}  // namespace morph::bench
