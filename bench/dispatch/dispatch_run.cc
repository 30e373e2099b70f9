#include "bench/dispatch/dispatch_run.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <pqxx/pqxx>
#include <thread>

#include "absl/strings/str_cat.h"
#include "bench/common/cpu_time.h"
#include "bench/dispatch/metered.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "libs/store/postgres/connection_pool.h"
#include "libs/store/postgres/dispatch_store.h"
#include "libs/store/postgres/migrator.h"
#include "libs/transport/mqtt/native_mqtt_publisher.h"
#include "migrations/embedded_migrations.h"
#include "prometheus/registry.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/outbox.h"
#include "services/dispatcher/apps/reconciler.h"

namespace mmi::bench {
namespace {

using Steady = std::chrono::steady_clock;

std::string GroupOf(const std::string& name) {
  if (name.starts_with("dispatch-loop")) {
    return "reconcile loop: decide, build payload, outbox, publish hand-over (dispatch-loop)";
  }
  if (name.starts_with("dispatch-worke")) {
    return "worker pool: record, mark published (dispatch-worker)";
  }
  return "MQTT client: send, PUBACKs, callbacks (mqtt-pub, mqtt-pub-cb)";
}

absl::StatusOr<std::string> FreshDatabase(const RunSettings& s) {
  static std::atomic<int> n{0};
  const std::string db = absl::StrCat("dispatch_bench_", getpid(), "_", n++);
  try {
    pqxx::connection admin(s.pg_admin_dsn);
    pqxx::nontransaction tx(admin);
    tx.exec0("CREATE DATABASE " + db);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("create database ", db, ": ", e.what()));
  }
  const std::string dsn = s.pg_base_dsn + db;
  auto migrated = store::postgres::ApplyMigrations({.dsn = dsn}, migrations::All());
  if (!migrated.ok()) {
    return migrated.status();
  }
  return dsn;
}

// What the run reads before and after the dispatch.
struct CpuSnapshot {
  ThreadGroups threads;
  double pg_ns = 0;
  double mqtt_ns = 0;
  Steady::time_point at;
};

CpuSnapshot Snapshot(const RunSettings& s) {
  return {ThreadCpuByGroup(&GroupOf), ProcessTreeCpuNs(s.pg_pid), ProcessTreeCpuNs(s.mqtt_pid),
          Steady::now()};
}

// The pipeline as DispatcherApp wires it (services/dispatcher/dispatcher_app.cc), members in
// construction order.
struct Pipeline {
  // `changed`: the Applications whose spec differs from what the cold run dispatched.
  Pipeline(const RunSettings& s, const std::string& dsn,
           const std::vector<std::size_t>& changed = {})
      : pool({.dsn = dsn, .size = s.workers}),
        metrics(registry, "mqtt"),
        pg_store(pool, [this](std::string_view operation, std::chrono::nanoseconds elapsed,
                              bool ok) { metrics.StoreQuery(operation, elapsed, ok); }),
        store(pg_store),
        mqtt(MakePublisher(s, registry)),
        publisher(*mqtt),
        loop(RealClock::Instance(), "dispatch-loop"),
        workers(RealClock::Instance(), "dispatch-worker", s.workers),
        outbox(loop, workers, store, publisher, RealClock::Instance(), metrics,
               OutboxSettingsFor(s)),
        lister(s.shape, changed),
        reconciler(Deps(), {}) {
    AddClusters(s.shape, clusters);
  }
  ~Pipeline() {
    reconciler.Deactivate();
    publisher.Stop();
    loop.Stop();
    workers.Stop();
  }
  static std::unique_ptr<transport::Publisher> MakePublisher(const RunSettings& s,
                                                             prometheus::Registry& registry) {
    transport::MqttSettings m;
    m.broker_host = s.mqtt_host;
    m.source_id = "app-work-client";
    m.client_id = absl::StrCat("dispatch-bench-", getpid());
    return std::make_unique<transport::NativeMqttPublisher>(m, RealClock::Instance(), registry);
  }
  static dispatcher::OutboxSettings OutboxSettingsFor(const RunSettings& s) {
    dispatcher::OutboxSettings o;
    if (s.max_in_flight > 0) {
      o.max_in_flight = s.max_in_flight;
    }
    o.mark_linger = s.mark_linger;
    return o;
  }
  dispatcher::ReconcilerDeps Deps() {
    return {loop, workers, store, hub, lister, clusters, outbox, metrics, RealClock::Instance()};
  }

  prometheus::Registry registry;
  store::postgres::ConnectionPool pool;
  dispatcher::DispatcherMetrics metrics;
  store::postgres::PostgresDispatchStore pg_store;  // timed into metrics
  MeteredStore store;
  std::unique_ptr<transport::Publisher> mqtt;
  MeteredPublisher publisher;
  Loop loop;
  WorkerPool workers;
  dispatcher::Outbox outbox;
  kube::testing::FakeKubeClient hub;
  SyncedLister lister;
  dispatcher::ManagedClusterTracker clusters;
  dispatcher::Reconciler reconciler;
};

absl::Status WaitConnected(const Pipeline& p) {
  const auto deadline = Steady::now() + std::chrono::seconds(30);
  while (!p.publisher.connected()) {
    if (Steady::now() > deadline) {
      return absl::UnavailableError("the MQTT publisher did not connect within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::OkStatus();
}

// Waits until every Application was acknowledged and marked published; fills the timings.
absl::Status WaitDispatched(const RunSettings& s, Pipeline& p, Steady::time_point start,
                            RunResult& r) {
  const auto n = static_cast<int64_t>(s.shape.applications);
  const auto deadline = start + std::chrono::duration<double>(s.timeout_seconds);
  while (p.publisher.acknowledged() < n || p.store.marked() < n || p.outbox.pending() > 0) {
    if (r.first_record_seconds == 0 && p.store.record().calls.load() > 0) {
      r.first_record_seconds = std::chrono::duration<double>(Steady::now() - start).count();
    }
    if (Steady::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("after ", s.timeout_seconds, " s: ", p.publisher.acknowledged(),
                       " acknowledged, ", p.store.marked(), " marked published of ", n));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return absl::OkStatus();
}

void FillCosts(const CpuSnapshot& before, const CpuSnapshot& after, const Pipeline& p,
               RunResult& r) {
  const double n = static_cast<double>(r.applications);
  const auto us = [n](double ns) { return ns / 1e3 / n; };
  for (const auto& [group, ns] : after.threads) {
    const auto it = before.threads.find(group);
    const double spent = ns - (it == before.threads.end() ? 0 : it->second);
    r.threads.push_back({group, us(spent)});
    r.process_us_per_app += us(spent);
  }
  r.stages = {
      {"record: Record() on a worker (SQL built, sent, seqs read)",
       us(static_cast<double>(p.store.record().cpu_ns.load()))},
      {"publish: Publisher::Publish() on the loop (MQTT encode, queue for the client)",
       us(static_cast<double>(p.publisher.publish().cpu_ns.load()))},
      {"mark published: MarkPublished() on a worker",
       us(static_cast<double>(p.store.mark().cpu_ns.load()))},
  };
  r.peers = {{"PostgreSQL server (postmaster + backends)", us(after.pg_ns - before.pg_ns)},
             {"mosquitto", us(after.mqtt_ns - before.mqtt_ns)}};
  r.record_calls = p.store.record().calls.load();
  r.mark_calls = p.store.mark().calls.load();
  r.publish_failures = p.publisher.failed();
  r.mean_ack_wait_ms = p.publisher.ack_wait_seconds() * 1e3 / n;
  r.max_awaiting_ack = p.publisher.max_awaiting();
}

absl::Status CheckStore(const std::string& dsn, RunResult& r) {
  try {
    pqxx::connection conn(dsn);
    pqxx::nontransaction tx(conn);
    r.rows_published =
        tx.exec1("SELECT count(*) FROM dispatched_resources WHERE last_published_at IS NOT NULL")[0]
            .as<int64_t>();
    r.outbox_rows = tx.exec1("SELECT count(*) FROM outbox")[0].as<int64_t>();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("checking the store: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status StartPipeline(Pipeline& p) {
  if (absl::Status s = p.publisher.Start(); !s.ok()) {
    return s;
  }
  if (absl::Status s = WaitConnected(p); !s.ok()) {
    return s;
  }
  p.loop.Start();
  p.workers.Start();
  return absl::OkStatus();
}

// A dispatcher restarted on the warm database of the cold run, with settings.restart_changes
// Applications changed on the hub: their keys reach it as the watch delivers them, the moment it
// is activated, while it loads the dispatch state of every Application.
absl::StatusOr<RestartResult> RunRestart(const RunSettings& settings, const std::string& dsn) {
  const std::vector<std::size_t> changed =
      ChangedApplications(settings.shape, settings.restart_changes);
  Pipeline p(settings, dsn, changed);
  if (absl::Status s = StartPipeline(p); !s.ok()) {
    return s;
  }
  RestartResult r;
  r.changes = changed.size();
  const auto n = static_cast<int64_t>(changed.size());
  const auto start = Steady::now();
  const auto since = [start] {
    return std::chrono::duration<double>(Steady::now() - start).count();
  };
  p.reconciler.Activate();
  for (std::size_t app : changed) {
    p.reconciler.Enqueue(SyncedLister::KeyOf(settings.shape, app), /*urgent=*/true);
  }
  // Each acknowledgement's time, polled every millisecond: the restart publishes the changes
  // and nothing else (every other Application is unchanged).
  std::vector<double> acks;
  const auto deadline = start + std::chrono::duration<double>(settings.timeout_seconds);
  for (;;) {
    const int64_t acked = p.publisher.acknowledged();
    while (static_cast<int64_t>(acks.size()) < acked) {
      acks.push_back(since());
    }
    const bool loaded = p.reconciler.loaded();
    if (loaded && r.state_loaded_seconds == 0) {
      r.state_loaded_seconds = since();
    }
    if (loaded && acked >= n && !p.reconciler.busy() && p.reconciler.queue_depth() == 0 &&
        p.outbox.pending() == 0) {
      r.settled_seconds = since();
      break;
    }
    if (Steady::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("restart: after ", settings.timeout_seconds, " s ", acked, " of ", n,
                       " changes acknowledged, state loaded: ", loaded));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  r.published = p.publisher.acknowledged();
  r.warm_load_query_seconds = p.store.load_seconds();
  r.decided_before_load = static_cast<int64_t>(p.metrics.decided_before_load().Value());
  if (n > 0) {
    r.first_change_seconds = acks.front();
    r.median_change_seconds = acks[static_cast<std::size_t>(n / 2)];
    r.last_change_seconds = acks[static_cast<std::size_t>(n - 1)];
  }
  return r;
}

}  // namespace

absl::StatusOr<RunResult> RunDispatch(const RunSettings& settings) {
  auto dsn = FreshDatabase(settings);
  if (!dsn.ok()) {
    return dsn.status();
  }
  RunResult r;
  r.applications = settings.shape.applications;
  {
    Pipeline p(settings, *dsn);
    if (absl::Status s = StartPipeline(p); !s.ok()) {
      return s;
    }
    const CpuSnapshot before = Snapshot(settings);
    p.reconciler.Activate();
    if (absl::Status s = WaitDispatched(settings, p, before.at, r); !s.ok()) {
      return s;
    }
    const CpuSnapshot after = Snapshot(settings);
    r.seconds = std::chrono::duration<double>(after.at - before.at).count();
    r.apps_per_second = static_cast<double>(r.applications) / r.seconds;
    FillCosts(before, after, p, r);
  }
  if (absl::Status s = CheckStore(*dsn, r); !s.ok()) {
    return s;
  }
  if (settings.restart_changes > 0) {
    auto restart = RunRestart(settings, *dsn);
    if (!restart.ok()) {
      return restart.status();
    }
    r.restart = *restart;
  }
  return r;
}

}  // namespace mmi::bench
