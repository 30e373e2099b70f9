#include "services/status-sink/status_sink_app.h"

#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/common/loop.h"
#include "libs/common/status_macros.h"
#include "libs/metrics/admin_server.h"
#include "libs/metrics/build_info.h"
#include "libs/service/admin.h"
#include "libs/service/hub.h"
#include "libs/service/run.h"
#include "libs/service/schema.h"
#include "libs/store/postgres/connection_pool.h"
#include "libs/store/postgres/notification_listener.h"
#include "libs/store/postgres/status_store.h"
#include "libs/transport/factory.h"

namespace mmi::status_sink {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("status_sink.app");
  return logger;
}

}  // namespace

// Declared in construction order; destroyed in reverse after Stop().
struct StatusSinkApp::Components {
  service::HubConnection hub;
  std::unique_ptr<store::postgres::ConnectionPool> pool;
  std::unique_ptr<store::postgres::PostgresStatusStore> store;
  std::unique_ptr<SinkMetrics> metrics;
  transport::TransportClients transport;
  std::unique_ptr<WorkerPool> writer_pool;
  std::unique_ptr<WorkerPool> store_pool;
  std::unique_ptr<Writer> writer;
  std::unique_ptr<InformerRollingSyncLookup> rolling_sync;
  std::unique_ptr<Sink> sink;
  // LISTEN mmi_manifest_render while leading: started after the sink, stopped before it.
  std::unique_ptr<store::postgres::NotificationListener> renders;
  std::unique_ptr<service::LeaderCampaign> leader;
  std::unique_ptr<metrics::AdminServer> admin;
};

StatusSinkApp::StatusSinkApp(StatusSinkSettings settings) : settings_(std::move(settings)) {}

StatusSinkApp::~StatusSinkApp() { Stop(); }

absl::Status StatusSinkApp::Start() {
  c_ = std::make_unique<Components>();
  Components& c = *c_;
  Clock& clock = RealClock::Instance();
  ASSIGN_OR_RETURN(c.hub,
                   service::AnnounceAndConnectHub(Log(), "status-sink", SettingsSummary(settings_),
                                                  settings_.kube, clock, *registry_));
  ASSIGN_OR_RETURN(c.pool, service::OpenStore(settings_.store));
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

  // kRunOnCaller: work handed over while they stop still runs, so no acknowledgement is lost.
  c.writer_pool = std::make_unique<WorkerPool>(clock, "status-writers", settings_.writers,
                                               AfterStop::kRunOnCaller);
  c.store_pool = std::make_unique<WorkerPool>(clock, "status-store", settings_.store.pool_size,
                                              AfterStop::kRunOnCaller);
  c.writer_pool->Start();
  c.store_pool->Start();
  c.writer =
      std::make_unique<Writer>(settings_.writer, *c.hub.client, *c.writer_pool, clock, *c.metrics);
  if (settings_.sink.progressing_before_healthy == ProgressingMode::kRollingSync) {
    // Which ApplicationSets use RollingSync; until its first list the sink assumes they all do.
    c.rolling_sync =
        std::make_unique<InformerRollingSyncLookup>(*c.hub.client, clock, registry_.get());
    c.rolling_sync->Start();
  }
  c.sink = std::make_unique<Sink>(settings_.sink, *c.transport.subscriber, *c.transport.publisher,
                                  *c.store, *c.writer, *c.store_pool, clock, *c.metrics,
                                  c.rolling_sync.get());
  c.renders = std::make_unique<store::postgres::NotificationListener>(
      store::postgres::NotificationListenerSettings{.dsn = settings_.store.dsn,
                                                    .channel = store::kManifestRenderChannel,
                                                    .what = "manifest render changes",
                                                    .logger = "status-sink.renders"},
      // On every (re)connection: the renders changed since their status was last written.
      [store = c.store.get()](const store::postgres::NotificationListener::Callback& missed) {
        return store->ForEachStaleManifestRender(
            [&missed](const std::string& resource_id, const std::string& /*cluster*/) {
              missed(resource_id);
            });
      });

  // Readiness is about dependencies (broker connected; for the leader: resumed from the store
  // and subscribed), so a standby replica is ready. Leadership is the
  // mmi_leader_election_is_leader gauge and the "leader observed" log, as in the dispatcher.
  c.admin = service::MakeAdminServer(settings_.admin_listen, registry_, *c.transport.publisher);
  c.admin->AddReadinessCheck("status-sink", [this] {
    if (!leading_.load()) {
      return absl::OkStatus();  // standby: nothing resumed or subscribed yet by design
    }
    return sink_ready() ? absl::OkStatus()
                        : absl::UnavailableError("not resumed from the store or not subscribed");
  });
  if (auto served = c.admin->Start(); !served.ok()) {
    return served;
  }

  ASSIGN_OR_RETURN(c.leader, service::LeaderCampaign::Create(
                                 c.hub.settings, settings_.leader, clock, *registry_,
                                 [this] { StartLeading(); }, [this] { OnLostLeadership(); }));
  return c.leader->Start();
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
      stop_.WaitFor(std::chrono::duration_cast<std::chrono::milliseconds>(delay));
    }
    if (stopping_.load()) {
      return;
    }
    if (auto started = c_->sink->Start(); !started.ok()) {
      Log().Error("cannot start the status subscription", {{"error", started.ToString()}});
      RequestStop();
      return;
    }
    c_->renders->Start([sink = c_->sink.get()](const std::string& resource_id) {
      sink->ManifestRenderChanged(resource_id);
    });
  });
}

void StatusSinkApp::OnLostLeadership() {
  if (!leading_.load()) {
    return;
  }
  Log().Warn("lost the leader lease: stopping writes");
  stop_.Request(1);  // the pod restarts as a candidate
}

void StatusSinkApp::RequestStop() { stop_.Request(0); }

int StatusSinkApp::Wait() { return stop_.Wait(); }

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
  const bool lost = stop_.exit_code() != 0;
  if (c.renders) {
    c.renders->Stop();
  }
  // Another replica may already lead after a lost lease: no drain then.
  if (c.sink) {
    c.sink->Stop(lost ? std::chrono::milliseconds(0) : settings_.shutdown_timeout);
  }
  if (c.writer_pool) {
    c.writer_pool->Stop();
  }
  if (c.rolling_sync) {
    c.rolling_sync->Stop();
  }
  if (c.store_pool) {
    c.store_pool->Stop();
  }
  if (c.transport.publisher) {
    c.transport.publisher->Stop();
  }
  if (c.leader) {
    c.leader->Stop();  // releases the lease only now that nothing writes any more
  }
  if (c.admin) {
    c.admin->Stop();
  }
  Log().Info("stopped");
}

int StatusSinkMain(int argc, char** argv) {
  return service::ServiceMain<StatusSinkApp>("status-sink", Log(), argc, argv, LoadSettings);
}

}  // namespace mmi::status_sink
