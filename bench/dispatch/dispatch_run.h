// The dispatcher's Applications pipeline end to end on the real PostgreSQL and mosquitto: the
// reconcile loop and its worker pool, Reconciler, Outbox, PostgresDispatchStore (timed
// into the dispatcher's metrics), and the MQTT publisher, fed from a synced cache of generated
// Applications (fleet_apps.h; the hub itself is a FakeKubeClient, never written for these
// Applications). Measures a cold dispatch: from Activate() on an empty database until every
// Application was recorded, acknowledged by the broker (PUBACK) and marked published; and where
// the CPU went, by thread and by stage (metered.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/dispatch/fleet_apps.h"

namespace mmi::bench {

struct RunSettings {
  FleetShape shape;
  std::string pg_admin_dsn;  // a database the run may create its own database from
  std::string pg_base_dsn;   // the same server, without the database name (".../" + db appended)
  int pg_pid = 0;            // PostgreSQL's postmaster, for its CPU
  std::string mqtt_host;     // host:port
  int mqtt_pid = 0;          // mosquitto, for its CPU
  int workers = 4;           // the dispatcher's default (dispatch.workers, store.poolSize)
  // Outbox publishes awaiting their PUBACK at most (outbox.maxInFlight; 0: the default).
  std::size_t max_in_flight = 0;
  std::chrono::milliseconds mark_linger{20};  // outbox.markLinger (the dispatcher's default)
  double timeout_seconds = 1800;
  // After the cold dispatch, a restart on the same database with this many Applications changed
  // on the hub while the restarted dispatcher loads its state (0: no restart).
  std::size_t restart_changes = 0;
};

// A dispatcher restarted on the warm database: the changed Applications are handed to it as
// the informer's watch would (urgent keys) the moment it is activated, while it loads the dispatch
// state of every Application; each change's time to the broker's PUBACK, next to that load.
struct RestartResult {
  std::size_t changes = 0;
  double state_loaded_seconds = 0;     // Activate() to the dispatch state installed
  double warm_load_query_seconds = 0;  // of which ForEachResource() (the store histogram)
  double first_change_seconds = 0;     // Activate() to the first change acknowledged
  double median_change_seconds = 0;
  double last_change_seconds = 0;
  int64_t decided_before_load = 0;  // mmi_dispatcher_decided_before_load_total
  int64_t published = 0;       // events the restart published: the changes alone when all is well
  double settled_seconds = 0;  // Activate() to every Application reconciled again
};

struct CostLine {
  std::string what;
  double us_per_app = 0;  // CPU microseconds per Application
};

struct RunResult {
  std::size_t applications = 0;
  double seconds = 0;  // Activate() to the last Application marked published
  double apps_per_second = 0;
  double first_record_seconds = 0;  // Activate() to the first batch recorded
  std::vector<CostLine> stages;     // per stage (metered), in pipeline order
  std::vector<CostLine> threads;    // per thread group of this process
  std::vector<CostLine> peers;      // PostgreSQL, mosquitto
  double process_us_per_app = 0;    // every thread of the pipeline
  int64_t record_calls = 0;
  int64_t mark_calls = 0;
  int64_t publish_failures = 0;
  double mean_ack_wait_ms = 0;   // Publish() to the broker's PUBACK, mean over the events
  int64_t max_awaiting_ack = 0;  // events awaiting their PUBACK at once, at most
  int64_t rows_published = 0;    // dispatched_resources with last_published_at, checked after
  int64_t outbox_rows = 0;       // left in the outbox, checked after (0 when all went out)
  std::optional<RestartResult> restart;
};

absl::StatusOr<RunResult> RunDispatch(const RunSettings& settings);

}  // namespace mmi::bench
