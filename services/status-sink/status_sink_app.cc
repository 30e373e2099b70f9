#include "services/status-sink/status_sink_app.h"

#include <signal.h>

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/config.h"
#include "libs/common/log.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/leader_elector.h"
#include "libs/metrics/admin_server.h"
#include "libs/metrics/build_info.h"
#include "libs/store/postgres/connection_pool.h"
#include "libs/store/postgres/migrator.h"
#include "libs/store/postgres/status_store.h"
#include "libs/transport/factory.h"
#include "migrations/embedded_migrations.h"

namespace mmi::status_sink {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("status_sink.app");
  return logger;
}

absl::StatusOr<kube::RestConfig> HubRestConfig(const KubeSettings& k) {
  if (!k.kubeconfig.empty()) {
    return kube::LoadKubeconfigFiles({k.kubeconfig}, k.context);
  }
  return kube::LoadInClusterConfig(kube::InClusterPaths{}, k.in_cluster_host, k.in_cluster_port);
}

}  // namespace

// Declared in construction order; destroyed in reverse after Stop().
struct StatusSinkApp::Components {
  std::unique_ptr<kube::HttpKubeClient> hub;
  std::unique_ptr<kube::HttpKubeClient> lease_client;
  std::unique_ptr<store::postgres::ConnectionPool> pool;
  std::unique_ptr<store::postgres::PostgresStatusStore> store;
  std::unique_ptr<SinkMetrics> metrics;
  transport::TransportClients transport;
  std::unique_ptr<ThreadPool> writer_pool;
  std::unique_ptr<ThreadPool> store_pool;
  std::unique_ptr<Writer> writer;
  std::unique_ptr<Sink> sink;
  std::unique_ptr<kube::LeaderElector> elector;
  std::unique_ptr<metrics::AdminServer> admin;
};

StatusSinkApp::StatusSinkApp(StatusSinkSettings settings) : settings_(std::move(settings)) {}

StatusSinkApp::~StatusSinkApp() { Stop(); }

absl::Status StatusSinkApp::Start() {
  c_ = std::make_unique<Components>();
  Components& c = *c_;
  Clock& clock = RealClock::Instance();
  metrics::RegisterBuildInfo(*registry_, "status-sink");
  Log().Info("starting", {{"version", metrics::Version()}, {"config", SettingsSummary(settings_)}});

  auto rest = HubRestConfig(settings_.kube);
  if (!rest.ok()) {
    return absl::Status(rest.status().code(),
                        absl::StrCat("kube config: ", rest.status().message()));
  }
  rest->user_agent = absl::StrCat("mmi-status-sink/", metrics::Version());
  kube::HttpKubeClientSettings hub_settings;
  hub_settings.rest = *rest;
  hub_settings.rate_limit = {settings_.kube.qps, settings_.kube.burst};
  hub_settings.request_timeout = settings_.kube.request_timeout;
  auto hub = kube::HttpKubeClient::Create(hub_settings, clock, kube::RealSleeper::Instance(),
                                          registry_.get());
  if (!hub.ok()) {
    return hub.status();
  }
  c.hub = *std::move(hub);

  if (settings_.store.migrate) {
    auto migrated =
        store::postgres::ApplyMigrations({.dsn = settings_.store.dsn}, migrations::All());
    if (!migrated.ok()) {
      return absl::Status(migrated.status().code(),
                          absl::StrCat("migrations: ", migrated.status().message()));
    }
    Log().Info("schema ready", {{"version", migrated->current_version}});
  }
  c.pool = std::make_unique<store::postgres::ConnectionPool>(
      store::postgres::ConnectionPoolSettings{settings_.store.dsn, settings_.store.pool_size});
  c.store = std::make_unique<store::postgres::PostgresStatusStore>(*c.pool);
  c.metrics = std::make_unique<SinkMetrics>(*registry_);

  auto clients = transport::MakeClients(settings_.transport, {clock, *registry_});
  if (!clients.ok()) {
    return clients.status();
  }
  c.transport = *std::move(clients);
  if (auto started = c.transport.publisher->Start(); !started.ok()) {
    return started;
  }

  c.writer_pool = std::make_unique<ThreadPool>("status-writers", settings_.writers);
  c.store_pool = std::make_unique<ThreadPool>("status-store", settings_.store.pool_size);
  c.writer = std::make_unique<Writer>(settings_.writer, *c.hub, *c.writer_pool, clock, *c.metrics);
  c.sink = std::make_unique<Sink>(settings_.sink, *c.transport.subscriber, *c.transport.publisher,
                                  *c.store, *c.writer, *c.store_pool, clock, *c.metrics);

  metrics::AdminServerSettings admin_settings;
  admin_settings.listen_address = settings_.admin_listen;
  c.admin = std::make_unique<metrics::AdminServer>(admin_settings, registry_);
  c.admin->AddReadinessCheck("leader", [this] {
    return leading_.load() ? absl::OkStatus()
                           : absl::UnavailableError("standby: another replica holds the lease");
  });
  c.admin->AddReadinessCheck("status-sink", [this] {
    return sink_ready() ? absl::OkStatus()
                        : absl::UnavailableError("not resumed from the store or not subscribed");
  });
  c.admin->AddReadinessCheck("broker", [&c] {
    return c.transport.publisher->connected()
               ? absl::OkStatus()
               : absl::UnavailableError("transport publisher not connected");
  });
  if (auto served = c.admin->Start(); !served.ok()) {
    return served;
  }

  if (!settings_.leader.enabled) {
    StartLeading();
    return absl::OkStatus();
  }
  kube::HttpKubeClientSettings lease_settings = hub_settings;
  lease_settings.request_timeout = settings_.leader.retry_period;
  lease_settings.retry.max_retries = 0;
  auto lease_client =
      kube::HttpKubeClient::Create(lease_settings, clock, kube::RealSleeper::Instance(), nullptr);
  if (!lease_client.ok()) {
    return lease_client.status();
  }
  c.lease_client = *std::move(lease_client);
  c.elector = std::make_unique<kube::LeaderElector>(
      *c.lease_client, clock,
      kube::LeaderElectionSettings{settings_.leader.lease_namespace, settings_.leader.lease_name,
                                   settings_.leader.identity, settings_.leader.lease_duration,
                                   settings_.leader.renew_deadline, settings_.leader.retry_period,
                                   true},
      kube::LeaderCallbacks{.on_started_leading = [this] { StartLeading(); },
                            .on_stopped_leading = [this] { OnLostLeadership(); },
                            .on_new_leader =
                                [](const std::string& holder) {
                                  Log().Info("leader observed", {{"holder", holder}});
                                }});
  return c.elector->Start();
}

void StatusSinkApp::StartLeading() {
  if (leading_.exchange(true) || stopping_.load()) {
    return;
  }
  Log().Info("leading: resuming and subscribing");
  // Resume() blocks on the database: not on the elector's thread.
  lead_thread_ = std::thread([this] {
    Backoff backoff(settings_.sink.retry_backoff);
    while (!stopping_.load()) {
      absl::Status resumed = c_->sink->Resume();
      if (resumed.ok()) {
        break;
      }
      const auto delay = backoff.Next();
      Log().Warn(
          "cannot resume from the store; retrying",
          {{"error", resumed.ToString()}, {"delay_ms", static_cast<int64_t>(delay.count())}});
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, delay, [&] { return stop_requested_ || lost_lease_; });
    }
    if (stopping_.load()) {
      return;
    }
    if (auto started = c_->sink->Start(); !started.ok()) {
      Log().Error("cannot start the status subscription", {{"error", started.ToString()}});
      RequestStop();
    }
  });
}

void StatusSinkApp::OnLostLeadership() {
  if (!leading_.load()) {
    return;
  }
  Log().Warn("lost the leader lease: stopping writes");
  {
    std::lock_guard<std::mutex> lock(mu_);
    lost_lease_ = true;
  }
  cv_.notify_all();
}

void StatusSinkApp::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
}

int StatusSinkApp::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return stop_requested_ || lost_lease_; });
  return lost_lease_ ? 1 : 0;
}

bool StatusSinkApp::sink_ready() const { return c_ && c_->sink && c_->sink->ready(); }

int StatusSinkApp::admin_port() const { return c_ && c_->admin ? c_->admin->port() : 0; }

void StatusSinkApp::Stop() {
  if (stopped_ || !c_) {
    return;
  }
  stopped_ = true;
  stopping_.store(true);
  RequestStop();
  if (lead_thread_.joinable()) {
    lead_thread_.join();
  }
  Components& c = *c_;
  bool lost = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lost = lost_lease_;
  }
  // Another replica may already lead after a lost lease: no drain then.
  if (c.sink) {
    c.sink->Stop(lost ? std::chrono::milliseconds(0) : settings_.shutdown_timeout);
  }
  if (c.writer_pool) {
    c.writer_pool->Stop();
  }
  if (c.store_pool) {
    c.store_pool->Stop();
  }
  if (c.transport.publisher) {
    c.transport.publisher->Stop();
  }
  if (c.elector) {
    c.elector->Stop();  // releases the lease only now that nothing writes any more
  }
  if (c.admin) {
    c.admin->Stop();
  }
  Log().Info("stopped");
}

int StatusSinkMain(int argc, char** argv) {
  // Signals are taken by one thread with sigwait(); block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  log::SetServiceName("status-sink");
  auto settings = LoadSettings(argc, argv, [](const char* name) { return config::GetEnv(name); });
  if (!settings.ok()) {
    if (settings.status().code() == absl::StatusCode::kCancelled) {
      std::cout << settings.status().message() << "\n";
      return 0;
    }
    Log().Error("invalid configuration", {{"error", std::string(settings.status().message())}});
    return 2;
  }
  log::SetMinLevel(*log::ParseLevel(settings->log_level));

  StatusSinkApp app(*std::move(settings));
  if (auto started = app.Start(); !started.ok()) {
    Log().Error("start-up failed", {{"error", started.ToString()}});
    app.Stop();
    return 1;
  }
  std::atomic<bool> done{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!done.load()) {
      Log().Info("signal received; shutting down", {{"signal", sig}});
    }
    app.RequestStop();
  });
  const int code = app.Wait();
  done.store(true);
  app.Stop();
  kill(getpid(), SIGTERM);  // wakes the signal thread (the signal is blocked everywhere)
  signal_thread.join();
  return code;
}

}  // namespace mmi::status_sink
