// dispatch_bench: a cold dispatch of N Applications from a synced cache to mosquitto, each
// recorded in PostgreSQL and acknowledged by the broker (issue #21 item 3): the in-process stage
// measures (stage_costs.h), then the pipeline end to end on the real peers (dispatch_run.h), as
// tables and as JSON. Prints figures only; nothing is asserted about them (a run that does not
// dispatch everything fails).
//
//   dispatch_bench --small                        # the ctest run: 2,000 Applications
//   dispatch_bench --apps 10000,100000 --json r.json   # the full run (README.md)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "bench/dispatch/dispatch_run.h"
#include "bench/dispatch/stage_costs.h"
#include "libs/common/log.h"
#include "nlohmann/json.hpp"
#include "tests/support/peer.h"

namespace mmi::bench {
namespace {

using nlohmann::json;

struct Options {
  bool small = false;
  bool stages_only = false;
  std::vector<std::size_t> apps{10'000, 100'000};
  std::size_t clusters = 1'000;
  std::size_t stage_apps = 5'000;
  int workers = 4;
  std::size_t max_in_flight = 64;  // cheaper than the default 256 (README.md, 2)
  int mark_linger_ms = 20;         // the dispatcher's outbox.markLinger
  std::size_t restart_changes = 0;
  std::string json_path;
};

json ToJson(const std::vector<CostLine>& lines) {
  json out = json::object();
  for (const auto& line : lines) {
    out[line.what] = line.us_per_app;
  }
  return out;
}

void PrintLines(const char* title, const std::vector<CostLine>& lines) {
  std::printf("| %s | CPU us/Application |\n|---|---|\n", title);
  for (const auto& line : lines) {
    std::printf("| %s | %.1f |\n", line.what.c_str(), line.us_per_app);
  }
}

json Report(const StageCosts& costs) {
  json stages = json::object();
  std::printf("\n### stages in process (reconcile loop), event %zu bytes\n\n", costs.event_bytes);
  std::printf("| stage | CPU us/Application |\n|---|---|\n");
  for (const auto& stage : costs.stages) {
    std::printf("| %s | %.1f |\n", stage.stage.c_str(), stage.us_per_app);
    stages[stage.stage] = stage.us_per_app;
  }
  return {{"event_bytes", costs.event_bytes}, {"us_per_application", stages}};
}

json Report(const RunResult& r, std::size_t clusters) {
  std::printf(
      "\n### end to end: %zu Applications on %zu clusters in %.2f s = %.0f Applications/s "
      "(first batch recorded at %.3f s; %lld Record and %lld MarkPublished calls)\n\n",
      r.applications, clusters, r.seconds, r.apps_per_second, r.first_record_seconds,
      static_cast<long long>(r.record_calls), static_cast<long long>(r.mark_calls));
  PrintLines("metered stage", r.stages);
  std::printf("\n");
  PrintLines("dispatcher threads", r.threads);
  std::printf("| all dispatcher threads | %.1f |\n\n", r.process_us_per_app);
  PrintLines("peers", r.peers);
  std::printf("\npublish to PUBACK: %.2f ms on average, %lld events awaiting it at most\n",
              r.mean_ack_wait_ms, static_cast<long long>(r.max_awaiting_ack));
  std::printf("checked: %lld rows published, %lld outbox rows left, %lld publish failures\n",
              static_cast<long long>(r.rows_published), static_cast<long long>(r.outbox_rows),
              static_cast<long long>(r.publish_failures));
  json restart = nullptr;
  if (r.restart) {
    const RestartResult& x = *r.restart;
    std::printf(
        "\n### restart on the warm database: %zu Applications changed as it starts\n\n"
        "| | s after Activate() |\n|---|---|\n"
        "| dispatch state loaded (of which the ForEachResource query %.2f s) | %.2f |\n"
        "| first change acknowledged by the broker | %.3f |\n"
        "| median change | %.3f |\n| last change | %.3f |\n"
        "| every Application reconciled again | %.2f |\n\n"
        "%lld decided before the state was loaded; %lld events published by the restart\n",
        x.changes, x.warm_load_query_seconds, x.state_loaded_seconds, x.first_change_seconds,
        x.median_change_seconds, x.last_change_seconds, x.settled_seconds,
        static_cast<long long>(x.decided_before_load), static_cast<long long>(x.published));
    restart = {{"changes", x.changes},
               {"state_loaded_s", x.state_loaded_seconds},
               {"for_each_resource_s", x.warm_load_query_seconds},
               {"first_change_s", x.first_change_seconds},
               {"median_change_s", x.median_change_seconds},
               {"last_change_s", x.last_change_seconds},
               {"settled_s", x.settled_seconds},
               {"decided_before_load", x.decided_before_load},
               {"published", x.published}};
  }
  return {{"applications", r.applications},
          {"restart", restart},
          {"clusters", clusters},
          {"seconds", r.seconds},
          {"applications_per_second", r.apps_per_second},
          {"first_record_seconds", r.first_record_seconds},
          {"record_calls", r.record_calls},
          {"mark_published_calls", r.mark_calls},
          {"stages_us_per_application", ToJson(r.stages)},
          {"threads_us_per_application", ToJson(r.threads)},
          {"dispatcher_us_per_application", r.process_us_per_app},
          {"peers_us_per_application", ToJson(r.peers)},
          {"rows_published", r.rows_published},
          {"outbox_rows_left", r.outbox_rows},
          {"publish_failures", r.publish_failures},
          {"mean_publish_to_puback_ms", r.mean_ack_wait_ms},
          {"max_awaiting_puback", r.max_awaiting_ack}};
}

absl::StatusOr<json> RunAll(const Options& o) {
  auto pg = testing::PeerProcess::Start("postgres");
  if (!pg.ok()) {
    return pg.status();
  }
  auto broker = testing::PeerProcess::Start("mosquitto");
  if (!broker.ok()) {
    return broker.status();
  }
  json runs = json::array();
  for (std::size_t apps : o.apps) {
    RunSettings settings{.shape = {.applications = apps, .clusters = std::min(o.clusters, apps)},
                         .pg_admin_dsn = (*pg)->Get("PG_DSN"),
                         .pg_base_dsn = "postgresql://mmi@127.0.0.1:" + (*pg)->Get("PG_PORT") + "/",
                         .pg_pid = std::stoi((*pg)->Get("PG_PID")),
                         .mqtt_host = (*broker)->Get("MQTT_HOST"),
                         .mqtt_pid = std::stoi((*broker)->Get("MOSQUITTO_PID")),
                         .workers = o.workers,
                         .max_in_flight = o.max_in_flight,
                         .mark_linger = std::chrono::milliseconds(o.mark_linger_ms),
                         .restart_changes = o.restart_changes};
    auto result = RunDispatch(settings);
    if (!result.ok()) {
      return result.status();
    }
    runs.push_back(Report(*result, settings.shape.clusters));
    std::fflush(stdout);
    if (result->rows_published != static_cast<int64_t>(apps) || result->outbox_rows != 0) {
      return absl::InternalError("not every Application was recorded as published");
    }
    if (result->restart &&
        result->restart->published != static_cast<int64_t>(result->restart->changes)) {
      return absl::InternalError(absl::StrCat("the restart published ", result->restart->published,
                                              " events for ", result->restart->changes,
                                              " changed Applications"));
    }
  }
  // Outside a gtest test PeerProcess keeps its data directory as if the test had failed (a
  // 300,000 run leaves gigabytes): a run that went well removes its peers' data itself.
  for (testing::PeerProcess* peer : {pg->get(), broker->get()}) {
    peer->Stop();
    std::error_code ignored;
    std::filesystem::remove_all(peer->data_dir(), ignored);
  }
  return runs;
}

int Run(const Options& o) {
  json report = {{"bench", "dispatch"},
                 {"workers", o.workers},
                 {"max_in_flight", o.max_in_flight},
                 {"mark_linger_ms", o.mark_linger_ms}};
  report["stages_in_process"] = Report(MeasureStages(
      {.applications = o.stage_apps, .clusters = o.clusters}, o.stage_apps, o.small ? 1 : 3));
  std::fflush(stdout);
  if (!o.stages_only) {
    auto runs = RunAll(o);
    if (!runs.ok()) {
      std::fprintf(stderr, "dispatch_bench: %s\n", std::string(runs.status().message()).c_str());
      return 1;
    }
    report["runs"] = *runs;
  }
  std::printf("\n%s\n", report.dump(2).c_str());
  if (!o.json_path.empty()) {
    std::ofstream(o.json_path) << report.dump(2) << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace mmi::bench

int main(int argc, char** argv) {
  mmi::bench::Options o;
  CLI::App cli("dispatch_bench: cold dispatch Applications/s and CPU per Application by stage");
  cli.add_flag("--small", o.small, "2,000 Applications on 200 clusters (the ctest run)");
  cli.add_flag("--stages-only", o.stages_only, "only the in-process stage measures");
  cli.add_option("--apps", o.apps, "Applications per run (one run each)")->delimiter(',');
  cli.add_option("--clusters", o.clusters, "ManagedClusters the Applications spread over");
  cli.add_option("--stage-apps", o.stage_apps, "Applications of the in-process stage measures");
  cli.add_option("--workers", o.workers, "worker threads and PostgreSQL connections");
  cli.add_option("--max-in-flight", o.max_in_flight, "outbox publishes awaiting a PUBACK at most");
  cli.add_option(
      "--mark-linger-ms", o.mark_linger_ms,
      "how long published seqs wait for others before MarkPublished (outbox.markLinger)");
  cli.add_option("--restart-changes", o.restart_changes,
                 "after each run, restart on its database with this many Applications changed");
  cli.add_option("--json", o.json_path, "also write the report here");
  CLI11_PARSE(cli, argc, argv);
  if (o.small) {
    o.apps = {2'000};
    o.clusters = 200;
    o.stage_apps = 500;
    o.restart_changes = 100;
  }
  mmi::log::SetMinLevel(mmi::log::Level::kWarn);
  return mmi::bench::Run(o);
}
