#include "bench/sink/sink_run.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <thread>

#include "absl/strings/str_cat.h"
#include "bench/common/cpu_time.h"
#include "libs/common/clock.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/rest_config.h"
#include "libs/store/postgres/migrator.h"
#include "libs/transport/testing/metric_value.h"
#include "migrations/embedded_migrations.h"
#include "services/status-sink/status_sink_app.h"
#include "services/status-sink/writes/writer.h"
#include "tests/support/peer.h"

namespace mmi::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string GroupOf(const std::string& name) {
  if (name.starts_with("status-sink")) {
    return "loop: decode, lookup, coalesce, dispatch (status-sink)";
  }
  if (name.starts_with("status-store")) {
    return "store: lookups, persist (status-store)";
  }
  if (name.starts_with("status-writers")) {
    return "hub writes (status-writers)";
  }
  // The MQTT subscriber runs on "mqtt-sub".
  if (name.starts_with("mqtt") || name.starts_with("kafka") || name.starts_with("rdk:") ||
      name == "sink_bench") {
    return "transport: receive + CloudEvent decode (MQTT client / librdkafka threads)";
  }
  return "other (kube watch, leader election, admin)";
}

std::vector<ThreadGroupCost> GroupCosts(const ThreadGroups& before, const ThreadGroups& after,
                                        std::size_t events, double* total) {
  std::vector<ThreadGroupCost> out;
  *total = 0;
  for (const auto& [group, ns] : after) {
    auto it = before.find(group);
    const double us =
        (ns - (it != before.end() ? it->second : 0)) / 1e3 / static_cast<double>(events);
    out.push_back({group, us});
    *total += us;
  }
  return out;
}

absl::Status PrepareHub(const std::string& kubeconfig, const EventShape& shape) {
  auto rest = kube::LoadKubeconfigFiles({kubeconfig});
  if (!rest.ok()) {
    return rest.status();
  }
  kube::HttpKubeClientSettings settings;
  settings.rest = *rest;
  auto client = kube::HttpKubeClient::Create(settings, RealClock::Instance(),
                                             RealSleeper::Instance(), nullptr);
  if (!client.ok()) {
    return client.status();
  }
  auto ns = (*client)->Create(
      {"", "v1", "namespaces", ""},
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kBenchHubNamespace}}}},
      {});
  if (!ns.ok() && ns.status().code() != absl::StatusCode::kAlreadyExists) {
    return ns.status();
  }
  for (std::size_t r = 0; r < shape.resources; ++r) {
    const json app = {
        {"apiVersion", "argoproj.io/v1alpha1"},
        {"kind", "Application"},
        {"metadata", {{"name", BenchAppName(r)}, {"namespace", kBenchHubNamespace}}},
        {"spec",
         {{"project", "default"},
          {"destination", {{"server", "https://cluster1.example"}, {"namespace", "guestbook"}}},
          {"source", {{"repoURL", "https://example.com/apps.git"}, {"path", "guestbook"}}}}}};
    auto created = (*client)->Create(status_sink::ApplicationsRef(kBenchHubNamespace), app, {});
    if (!created.ok()) {
      return created.status();
    }
  }
  return absl::OkStatus();
}

// The dispatcher's rows: one per resource, on the publisher's cluster.
absl::Status PrepareStore(const std::string& dsn, const EventShape& shape) {
  auto migrated = store::postgres::ApplyMigrations({.dsn = dsn}, migrations::All());
  if (!migrated.ok()) {
    return migrated.status();
  }
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  for (std::size_t r = 0; r < shape.resources; ++r) {
    tx.exec_params0(
        "INSERT INTO dispatched_resources (resource_id, cluster, hub_namespace, hub_name, "
        "hub_uid, work_name, payload_hash, payload) VALUES ($1, $2, $3, $4, $5, $6, 'h', '{}')",
        BenchResourceId(r), shape.cluster, kBenchHubNamespace, BenchAppName(r),
        "uid-" + std::to_string(r), "work-" + std::to_string(r));
  }
  tx.commit();
  return absl::OkStatus();
}

std::string PublisherCommand(const RunSettings& s, const testing::PeerProcess& broker,
                             bool prepare) {
  const std::string address =
      s.transport == "kafka" ? broker.Get("KAFKA_BOOTSTRAP") : broker.Get("MQTT_HOST");
  return absl::StrCat("'", s.publisher, "' --transport ", s.transport, " --broker ", address,
                      " --source-id ", s.shape.source_id, " --cluster ", s.shape.cluster,
                      " --bytes ", s.shape.target_bytes, " --resources ", s.shape.resources,
                      " --events ", s.events, prepare ? " --prepare" : "", " 2>&1");
}

status_sink::StatusSinkSettings SinkSettings(const RunSettings& s, const testing::PeerProcess& hub,
                                             const testing::PeerProcess& db,
                                             const testing::PeerProcess& broker) {
  status_sink::StatusSinkSettings settings;
  settings.kube.kubeconfig = hub.Get("KUBECONFIG");
  settings.store.dsn = db.Get("PG_DSN");
  settings.store.pool_size = 2;
  settings.leader.enabled = false;  // one replica: no lease to wait for
  settings.admin_listen = "127.0.0.1:0";
  settings.writers = 4;
  settings.shutdown_timeout = std::chrono::milliseconds(5'000);
  settings.sink.intake_capacity = s.events + 1;  // hold the whole run: nothing dropped
  if (s.transport == "kafka") {
    transport::KafkaSettings kafka;
    kafka.bootstrap_servers = broker.Get("KAFKA_BOOTSTRAP");
    kafka.source_id = s.shape.source_id;
    settings.transport = kafka;
  } else {
    transport::MqttSettings mqtt;
    mqtt.broker_host = broker.Get("MQTT_HOST");
    mqtt.source_id = s.shape.source_id;
    mqtt.client_id = "mmi-bench-sink";
    if (s.prefill) {
      mqtt.session_expiry = std::chrono::hours(1);
    }
    settings.transport = mqtt;
  }
  return settings;
}

}  // namespace

namespace {

// Runs the publisher to completion; its last line is "<events/s>".
absl::StatusOr<double> Publish(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return absl::InternalError("cannot start " + command);
  }
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    output += buffer;
  }
  if (pclose(pipe) != 0) {
    return absl::UnavailableError("the publisher failed: " + output);
  }
  const auto last = output.find_last_of(' ', output.size() - 2);
  return std::stod(output.substr(last == std::string::npos ? 0 : last + 1));
}

double Metric(status_sink::StatusSinkApp& app, const char* name,
              const std::map<std::string, std::string>& labels = {}) {
  return transport::testing::MetricValue(app.registry(), name, labels);
}

// Waits for `events` handled events; the times of the first and the last.
absl::Status AwaitHandled(status_sink::StatusSinkApp& app, std::size_t events,
                          Clock::time_point* first, double* handled_at_first,
                          Clock::time_point* last) {
  const auto deadline = Clock::now() + std::chrono::seconds(60 + events / 500);
  bool started = false;
  while (Clock::now() < deadline) {
    const double handled = Metric(app, "mmi_status_events_received_total");
    if (!started && handled > 0) {
      started = true;
      *first = Clock::now();
      *handled_at_first = handled;
    }
    if (handled >= static_cast<double>(events)) {
      *last = Clock::now();
      return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "the sink handled ", Metric(app, "mmi_status_events_received_total"), " of ", events));
}

absl::Status AwaitSinkReady(status_sink::StatusSinkApp& app) {
  const auto ready_deadline = Clock::now() + std::chrono::seconds(60);
  while (!app.sink_ready()) {
    if (Clock::now() > ready_deadline) {
      return absl::DeadlineExceededError("the sink did not lead, resume and subscribe in 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::OkStatus();
}

// Hub writes and persists trail the last event: waits until the write count stays put.
void AwaitWritesSettled(status_sink::StatusSinkApp& app) {
  double writes = -1;
  for (int i = 0; i < 50; ++i) {
    const double now = Metric(app, "mmi_status_updates_total", {{"result", "ok"}});
    if (now == writes) {
      return;
    }
    writes = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

// What the broker needs before the measured sink starts: the MQTT session that will hold the
// events (one start of the sink), the Kafka topic, and with `prefill` the events themselves
// (`published`: the publisher's rate).
absl::Status PrepareBroker(const RunSettings& s, const status_sink::StatusSinkSettings& settings,
                           const testing::PeerProcess& broker,
                           std::optional<absl::StatusOr<double>>& published) {
  if (s.prefill && s.transport == "mqtt") {
    status_sink::StatusSinkApp first_start(settings);
    if (auto st = first_start.Start(); !st.ok()) {
      return st;
    }
    if (auto st = AwaitSinkReady(first_start); !st.ok()) {
      return st;
    }
    first_start.RequestStop();
    first_start.Stop();
  }
  if (s.transport == "kafka") {  // before the sink's consumer joins
    if (auto prepared = Publish(PublisherCommand(s, broker, true)); !prepared.ok()) {
      return prepared.status();
    }
  }
  if (s.prefill) {
    published = Publish(PublisherCommand(s, broker, false));
    if (!published->ok()) {
      return published->status();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RunResult> RunSink(const RunSettings& s) {
  auto hub = testing::PeerProcess::Start("kube", {"ROLE=hub"});
  auto db = testing::PeerProcess::Start("postgres");
  auto broker = testing::PeerProcess::Start(s.transport == "kafka" ? "kafka" : "mosquitto");
  for (const auto* peer : {&hub, &db, &broker}) {
    if (!peer->ok()) {
      return peer->status();
    }
  }
  if (auto st = PrepareHub((*hub)->Get("KUBECONFIG"), s.shape); !st.ok()) {
    return st;
  }
  if (auto st = PrepareStore((*db)->Get("PG_DSN"), s.shape); !st.ok()) {
    return st;
  }
  auto settings = SinkSettings(s, **hub, **db, **broker);
  if (auto st = status_sink::FinalizeSettings(settings); !st.ok()) {
    return st;
  }
  std::optional<absl::StatusOr<double>> published;
  if (auto st = PrepareBroker(s, settings, **broker, published); !st.ok()) {
    return st;
  }
  status_sink::StatusSinkApp app(settings);
  auto before = ThreadCpuByGroup(GroupOf);
  if (auto st = app.Start(); !st.ok()) {
    return st;
  }
  Clock::time_point first;
  double handled_at_first = 0;
  Clock::time_point last;
  absl::Status handled = absl::OkStatus();
  if (s.prefill) {  // events flow as soon as the consumer joins
    handled = AwaitHandled(app, s.events, &first, &handled_at_first, &last);
  } else {
    if (auto st = AwaitSinkReady(app); !st.ok()) {
      return st;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // subscription settled, resync sent
    before = ThreadCpuByGroup(GroupOf);
    std::thread publisher([&] { published = Publish(PublisherCommand(s, **broker, false)); });
    handled = AwaitHandled(app, s.events, &first, &handled_at_first, &last);
    publisher.join();
  }
  if (handled.ok()) {
    AwaitWritesSettled(app);
  }
  const auto after = ThreadCpuByGroup(GroupOf);
  RunResult result;
  result.handled = static_cast<std::size_t>(Metric(app, "mmi_status_events_received_total"));
  result.hub_writes =
      static_cast<std::size_t>(Metric(app, "mmi_status_updates_total", {{"result", "ok"}}));
  app.RequestStop();
  app.Stop();
  if (!published->ok()) {
    return published->status();
  }
  if (!handled.ok()) {
    return handled;
  }
  result.publisher_events_per_second = **published;
  result.seconds = std::chrono::duration<double>(last - first).count();
  result.events_per_second =
      (static_cast<double>(s.events) - handled_at_first) / std::max(result.seconds, 1e-9);
  result.groups = GroupCosts(before, after, s.events, &result.total_us_per_event);
  return result;
}

}  // namespace mmi::bench
