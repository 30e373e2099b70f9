// sink_bench: the status sink's cost per status event (issue #21 item 4), for ~1.6 KB and
// ~20 KB events: the in-process stage measures (stage_costs.h), then the sink end to end on real
// peers over MQTT and Kafka (sink_run.h). Prints figures only; nothing is asserted about them.
//
//   sink_bench --small          # the ctest run: few events
//   sink_bench                  # the full run (README.md)
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/sink/sink_run.h"
#include "bench/sink/stage_costs.h"
#include "libs/common/log.h"

namespace mmi::bench {
namespace {

struct Options {
  bool small = false;
  bool stages_only = false;
  // kafka-prefilled, mqtt-prefilled: every event waits in the broker before the sink starts
  // (RunSettings::prefill); in the full run by default.
  std::vector<std::string> transports;
  std::size_t resources = 200;
  std::string publisher = MMI_SINK_PUBLISHER;
};

struct Size {
  const char* label;
  std::size_t bytes;
  std::size_t stage_events;
  std::size_t run_events;
};

std::vector<Size> Sizes(const Options& o) {
  if (o.small) {
    return {{"1.6 KB", 1'600, 200, 2'000}, {"20 KB", 20 * 1024, 50, 300}};
  }
  return {{"1.6 KB", 1'600, 2'000, 100'000}, {"20 KB", 20 * 1024, 500, 10'000}};
}

void PrintStages(const Size& size, const StageCosts& costs) {
  std::printf(
      "\n### stages, %s status (payload %zu bytes, %zu bytes as MQTT), CPU us per event\n\n",
      size.label, costs.payload_bytes, costs.event_bytes);
  std::printf("| stage | us/event |\n|---|---|\n");
  for (const auto& stage : costs.stages) {
    std::printf("| %s | %.2f |\n", stage.stage.c_str(), stage.us_per_event);
  }
}

void PrintRun(const std::string& transport, const Size& size, const RunResult& r) {
  std::printf(
      "\n### end to end, %s, %s status events: %zu handled, %.2f s from the first = %.0f events/s "
      "(publisher %.0f events/s), %zu hub writes\n\n",
      transport.c_str(), size.label, r.handled, r.seconds, r.events_per_second,
      r.publisher_events_per_second, r.hub_writes);
  std::printf("| sink threads | CPU us/event |\n|---|---|\n");
  for (const auto& group : r.groups) {
    std::printf("| %s | %.2f |\n", group.group.c_str(), group.us_per_event);
  }
  std::printf("| total | %.2f |\n", r.total_us_per_event);
}

int Run(const Options& o) {
  int failures = 0;
  for (const Size& size : Sizes(o)) {
    EventShape shape{.target_bytes = size.bytes, .resources = o.resources};
    PrintStages(size, MeasureStages(shape, size.stage_events, o.small ? 1 : 3));
  }
  std::fflush(stdout);
  if (o.stages_only) {
    return 0;
  }
  std::vector<std::string> transports = o.transports;
  if (transports.empty()) {
    transports = {"mqtt", "kafka"};
    if (!o.small) {
      transports.emplace_back("kafka-prefilled");
      transports.emplace_back("mqtt-prefilled");
    }
  }
  for (const std::string& transport : transports) {
    for (const Size& size : Sizes(o)) {
      const bool prefill = transport.ends_with("-prefilled");
      RunSettings settings{.transport = transport.substr(0, transport.find('-')),
                           .shape = {.target_bytes = size.bytes, .resources = o.resources},
                           .events = size.run_events,
                           .publisher = o.publisher,
                           .prefill = prefill};
      auto result = RunSink(settings);
      if (!result.ok()) {
        std::fprintf(stderr, "%s %s: %s\n", transport.c_str(), size.label,
                     std::string(result.status().message()).c_str());
        ++failures;
        continue;
      }
      PrintRun(transport, size, *result);
      std::fflush(stdout);
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace mmi::bench

int main(int argc, char** argv) {
  mmi::bench::Options o;
  CLI::App cli("sink_bench: status sink CPU per event and events/s");
  cli.add_flag("--small", o.small, "few events (the ctest run)");
  cli.add_flag("--stages-only", o.stages_only, "only the in-process stage measures");
  cli.add_option(
         "--transports", o.transports,
         "mqtt, kafka, kafka-prefilled, mqtt-prefilled (default: all; --small: mqtt, kafka)")
      ->delimiter(',')
      ->check(CLI::IsMember({"mqtt", "kafka", "kafka-prefilled", "mqtt-prefilled"}));
  cli.add_option("--resources", o.resources, "distinct resources (hub Applications)")
      ->check(CLI::PositiveNumber);
  cli.add_option("--publisher", o.publisher, "path of sink_publisher");
  CLI11_PARSE(cli, argc, argv);
  mmi::log::SetMinLevel(mmi::log::Level::kWarn);  // the sink's per-start info lines
  return mmi::bench::Run(o);
}
