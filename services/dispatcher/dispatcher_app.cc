#include "services/dispatcher/dispatcher_app.h"

#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/common/loop.h"
#include "libs/common/status_macros.h"
#include "libs/kube/informer.h"
#include "libs/metrics/admin_server.h"
#include "libs/metrics/build_info.h"
#include "libs/service/admin.h"
#include "libs/service/hub.h"
#include "libs/service/run.h"
#include "libs/service/schema.h"
#include "libs/store/deletion_confirmations.h"
#include "libs/store/postgres/connection_pool.h"
#include "libs/store/postgres/deletion_listener.h"
#include "libs/store/postgres/dispatch_store.h"
#include "libs/transport/factory.h"
#if MMI_DISPATCHER_WITH_GRPC
#include "libs/transport/grpc/maestro_resource_bundles.h"
#endif
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "services/dispatcher/apps/hub_writes.h"
#include "services/dispatcher/apps/managed_clusters.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/outbox.h"
#include "services/dispatcher/apps/reconciler.h"
#include "services/dispatcher/apps/spec_resync.h"
#include "services/dispatcher/gitops/gitops_cluster_controller.h"
#if MMI_DISPATCHER_WITH_MANIFESTS
#include "libs/argocd_repo/grpc/grpc_repo_server_client.h"
#include "libs/argocd_repo/metrics.h"
#include "services/dispatcher/manifests/manifest_renderer.h"
#include "services/dispatcher/manifests/render_cache.h"
#include "services/dispatcher/manifests/repo_secrets.h"
#endif

namespace mmi::dispatcher {
namespace {

// A publisher disconnected this long during shutdown is taken as down (it reconnects within a
// second or two when its peer is up).
constexpr auto kDeadPeerGrace = std::chrono::seconds(2);

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.app");
  return logger;
}

}  // namespace

// Declared in construction order: members are destroyed in reverse, after Stop().
struct DispatcherApp::Components {
  // Shared with AdminServer, which takes a shared_ptr to the registry it serves.
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  service::HubConnection hub;
  std::unique_ptr<store::postgres::ConnectionPool> pool;
  std::unique_ptr<DispatcherMetrics> metrics;
  std::unique_ptr<store::postgres::PostgresDispatchStore> store;  // timed into metrics
  std::unique_ptr<transport::Publisher> publisher;
  std::unique_ptr<transport::Subscriber> subscriber;
  std::unique_ptr<Loop> loop;
  std::unique_ptr<WorkerPool> workers;
  std::unique_ptr<Outbox> outbox;
  std::unique_ptr<ManagedClusterTracker> clusters;
  std::unique_ptr<kube::Informer> cluster_informer;
  std::unique_ptr<kube::Informer> app_informer;
  std::unique_ptr<InformerLister> lister;
  // Over gRPC with maestroRest.url: the Reconciler's REST look-ups of unconfirmed deletions.
  DeletionCheck::Lookup resource_exists;
#if MMI_DISPATCHER_WITH_MANIFESTS
  // Manifest delivery (ADR 0007). The renderer always (it refuses when the mode is off); the
  // rest only with manifests.repoServer.address.
  std::unique_ptr<argocd_repo::RepoServerMetrics> repo_metrics;
  std::unique_ptr<argocd_repo::GrpcRepoServerClient> repo_client;
  std::unique_ptr<WorkerPool> render_workers;  // the blocking repo-server calls
  std::unique_ptr<manifests::RenderCache> render_cache;
  std::unique_ptr<kube::Informer> secret_informer;
  std::unique_ptr<manifests::RepoSecrets> repo_secrets;
  std::unique_ptr<manifests::ManifestRenderer> manifest_renderer;
#endif
  std::unique_ptr<Reconciler> reconciler;
  std::unique_ptr<AppEventHandler> app_handler;
  std::unique_ptr<store::DeletionConfirmations> deletion;
  std::unique_ptr<SpecResyncResponder> resync;
  std::unique_ptr<GitOpsClusterController> gitops;
  std::unique_ptr<service::LeaderCampaign> leader;
  std::unique_ptr<metrics::AdminServer> admin;
  std::atomic<int64_t> loop_heartbeat_ns{0};
  std::atomic<bool> leading_started{false};
};

DispatcherApp::DispatcherApp(DispatcherSettings settings) : settings_(std::move(settings)) {}

DispatcherApp::~DispatcherApp() { Stop(); }

absl::Status DispatcherApp::Start() {
  c_ = std::make_unique<Components>();
  Components& c = *c_;
  Clock& clock = RealClock::Instance();
  // Hub API: one client for everything (the Lease has its own, see below).
  ASSIGN_OR_RETURN(c.hub,
                   service::AnnounceAndConnectHub(Log(), "dispatcher", SettingsSummary(settings_),
                                                  settings_.kube, clock, *c.registry));
  RETURN_IF_ERROR(OpenStore());
  RETURN_IF_ERROR(OpenTransport(clock));
  RETURN_IF_ERROR(BuildManifests(clock));
  BuildApplications(clock, StreamsFirstList());
  if (settings_.gitops_cluster_enabled) {
    c.gitops = std::make_unique<GitOpsClusterController>(*c.hub.client, clock,
                                                         settings_.gitops_cluster, *c.registry);
  }
  // Leadership (a Lease unless disabled): only the leader loads state and dispatches.
  ASSIGN_OR_RETURN(c.leader, service::LeaderCampaign::Create(
                                 c.hub.settings, settings_.leader, clock, *c.registry,
                                 [this] { StartLeading(); }, [this] { OnLostLeadership(); }));
  AddHealthChecks(clock);

  // Start in dependency order.
  if (absl::Status s = c.admin->Start(); !s.ok()) {
    return s;
  }
  if (absl::Status s = c.publisher->Start(); !s.ok()) {
    return s;
  }
  c.loop->Start();
  c.workers->Start();
  // Heartbeat for the liveness check.
  struct Beat {
    static void Schedule(Components& comp, const Clock& clk) {
      comp.loop_heartbeat_ns.store(clk.MonotonicNow().time_since_epoch().count());
      comp.loop->PostAfter(std::chrono::seconds(5), [&comp, &clk] { Schedule(comp, clk); });
    }
  };
  c.loop->Post([&c, &clock] { Beat::Schedule(c, clock); });
#if MMI_DISPATCHER_WITH_MANIFESTS
  if (c.render_workers) {
    c.render_workers->Start();
  }
  if (c.secret_informer) {
    c.secret_informer->Start();
  }
#endif
  c.cluster_informer->Start();
  c.app_informer->Start();
  return c.leader->Start();
}

// Manifest delivery (ADR 0007): the repo-server client, its worker threads, the render cache, the
// repository Secrets informer and the renderer the Reconciler asks. Before BuildApplications():
// the Reconciler borrows the renderer. The renderer's answers decide their key again.
absl::Status DispatcherApp::BuildManifests(Clock& clock) {
#if MMI_DISPATCHER_WITH_MANIFESTS
  Components& c = *c_;
  const ManifestDeliverySettings& m = settings_.manifests;
  c.loop = std::make_unique<Loop>(clock, "dispatch-loop");
  manifests::ManifestRendererSettings renderer_settings;
  renderer_settings.enabled = m.enabled();
  renderer_settings.render.controller_namespace = m.argocd_namespace;
  renderer_settings.payload = settings_.reconciler.payload;
  renderer_settings.resolve_interval = m.resolve_interval;
  renderer_settings.resolve_interval = m.resolve_interval;
  manifests::ManifestRenderer::Deps deps{
      .on_changed = [&c](const std::string& key) { c.reconciler->Enqueue(key, /*urgent=*/true); }};
  if (m.enabled()) {
    c.repo_metrics = std::make_unique<argocd_repo::RepoServerMetrics>(*c.registry);
    argocd_repo::GrpcRepoServerSettings client;
    client.address = m.repo_server.address;
    client.tls.enabled = m.repo_server.tls.enabled;
    client.tls.ca_file = m.repo_server.tls.ca_file;
    client.tls.server_name = m.repo_server.tls.server_name;
    client.tls.insecure_skip_verify = m.repo_server.tls.insecure_skip_verify;
    client.timeout = m.render_timeout;
    ASSIGN_OR_RETURN(c.repo_client,
                     argocd_repo::GrpcRepoServerClient::Create(client, *c.repo_metrics));
    c.render_workers =
        std::make_unique<WorkerPool>(clock, "render-worker", m.max_renders_in_flight);
    // mmi_dispatcher_render_asks_total{outcome}: how renders were served (hit, joined, render);
    // the renders themselves and their errors are mmi_repo_server_requests_total's.
    prometheus::Family<prometheus::Counter>& asks =
        prometheus::BuildCounter()
            .Name("mmi_dispatcher_render_asks_total")
            .Help("Manifest delivery's render asks by how the render cache served them")
            .Register(*c.registry);
    c.render_cache = std::make_unique<manifests::RenderCache>(
        manifests::RenderCache::Deps{
            .loop = *c.loop,
            .workers = *c.render_workers,
            .clock = clock,
            .client = *c.repo_client,
            .on_ask =
                [&asks](std::string_view outcome) {
                  asks.Add({{"outcome", std::string(outcome)}}).Increment();
                }},
        manifests::RenderCacheSettings{.resolve_interval = m.resolve_interval,
                                       .max_in_flight = m.max_renders_in_flight});
    c.secret_informer = std::make_unique<kube::Informer>(
        *c.hub.client, clock, manifests::RepoSecretsInformerSettings(m.argocd_namespace),
        c.registry.get());
    c.repo_secrets = std::make_unique<manifests::RepoSecrets>(
        [&c] { return c.secret_informer->List(); },
        // New credentials may render differently: every cached Application is decided again
        // (only those in manifest delivery ask the repo-server, and the cache answers repeats).
        [&c] {
          if (c.reconciler && c.lister) {
            for (const std::string& key : c.lister->Keys()) {
              c.reconciler->Enqueue(key);
            }
          }
        });
    c.secret_informer->AddHandler(*c.repo_secrets);
    deps.loop = c.loop.get();
    deps.loop = c.loop.get();
    deps.cache = c.render_cache.get();
    deps.secrets = c.repo_secrets.get();
  }
  c.manifest_renderer =
      std::make_unique<manifests::ManifestRenderer>(std::move(deps), std::move(renderer_settings));
  return absl::OkStatus();
#else
  (void)clock;
  if (settings_.manifests.enabled()) {
    return absl::FailedPreconditionError(
        "manifests.repoServer.address: this dispatcher was built without Argo CD's repo-server "
        "client (MMI_WITH_ARGOCD_REPO); leave it empty");
  }
  return absl::OkStatus();
#endif
}

absl::Status DispatcherApp::OpenStore() {
  Components& c = *c_;
  // PostgreSQL: schema first, then the pool.
  ASSIGN_OR_RETURN(c.pool, service::OpenStore(settings_.store));
  const std::string transport_name(transport::TransportName(settings_.transport));
  c.metrics = std::make_unique<DispatcherMetrics>(*c.registry, transport_name);
  c.store = std::make_unique<store::postgres::PostgresDispatchStore>(
      *c.pool,
      [metrics = c.metrics.get()](std::string_view operation, std::chrono::nanoseconds elapsed,
                                  bool ok) { metrics->StoreQuery(operation, elapsed, ok); });

  return absl::OkStatus();
}

absl::Status DispatcherApp::OpenTransport(Clock& clock) {
  Components& c = *c_;
  // Transport.
  const transport::TransportDeps deps{clock, *c.registry};
  if (settings_.spec_resync) {
    auto clients = transport::MakeClients(settings_.transport, deps);
    if (!clients.ok()) {
      return clients.status();
    }
    c.publisher = std::move(clients->publisher);
    c.subscriber = std::move(clients->subscriber);
  } else {
    auto publisher = transport::MakePublisher(settings_.transport, deps);
    if (!publisher.ok()) {
      return publisher.status();
    }
    c.publisher = *std::move(publisher);
  }
  if (!settings_.maestro_rest.base_url.empty()) {
#if MMI_DISPATCHER_WITH_GRPC
    // shared_ptr: the Lookup is a copyable std::function; the client is stateless and
    // thread-safe, and lives as long as the Reconciler holding the function.
    auto bundles = std::make_shared<transport::MaestroResourceBundles>(settings_.maestro_rest);
    c.resource_exists = [bundles](const std::string& id) { return bundles->Exists(id); };
    Log().Info("unconfirmed deletions are looked up in Maestro's REST API",
               {{"url", settings_.maestro_rest.base_url}});
#else
    return absl::FailedPreconditionError(
        "maestroRest.url is set but this dispatcher was built without gRPC (MMI_WITH_GRPC)");
#endif
  }
  return absl::OkStatus();
}

bool DispatcherApp::StreamsFirstList() {
  const FirstListChoice choice =
      ChooseFirstList(settings_, [this] { return c_->store->HasResources(); });
  Log().Log(choice.warn ? log::Level::kWarn : log::Level::kInfo, "first Application list",
            {{"how", choice.streamed ? "streamed" : "paged"}, {"why", choice.why}});
  return choice.streamed;
}

// The Applications room (apps/): reconcile loop, worker pool, informers, reconciler, outbox,
// deletion confirmations and spec resync answers.
void DispatcherApp::BuildApplications(Clock& clock, bool stream_first_list) {
  Components& c = *c_;
  kube::HttpKubeClient& hub_client = *c.hub.client;
  // Reconcile loop (made by BuildManifests() when it needs it first), worker pool and the
  // pipeline.
  if (!c.loop) {
    c.loop = std::make_unique<Loop>(clock, "dispatch-loop");
  }
  c.workers = std::make_unique<WorkerPool>(clock, "dispatch-worker", settings_.workers);
  c.outbox = std::make_unique<Outbox>(*c.loop, *c.workers, *c.store, *c.publisher, clock,
                                      *c.metrics, settings_.outbox);
  c.clusters = std::make_unique<ManagedClusterTracker>();
  kube::InformerSettings cluster_settings;
  cluster_settings.resource = ManagedClustersRef();
  cluster_settings.transform = kube::DropFields({"/status", "/spec", "/metadata/managedFields"});
  c.cluster_informer =
      std::make_unique<kube::Informer>(hub_client, clock, cluster_settings, c.registry.get());
  kube::InformerSettings app_settings;
  app_settings.resource = ApplicationsRef(settings_.watch_namespace);
  app_settings.label_selector = kPullLabel;
  app_settings.transform = ApplicationTransform();
  app_settings.compact_storage = settings_.compact_informer_storage;
  // Relists are paged: their watch hands out changes while the pages are read, so a new or
  // changed Application is dispatched at once instead of after the whole list (a streamed list
  // delivers changes only after its last initial event). The first list streams on a first
  // install (dispatch.firstList, settings.h): the API server serves it from its watch cache at a
  // fraction of a paged LIST's cost.
  app_settings.watch_list = stream_first_list;
  app_settings.stream_first_list_only = true;
  // Optionally, a start decides each page's Applications as it arrives (settings.h).
  app_settings.deliver_first_list_pages = settings_.first_list_by_pages;
  c.app_informer =
      std::make_unique<kube::Informer>(hub_client, clock, app_settings, c.registry.get());
  c.lister = std::make_unique<InformerLister>(*c.app_informer);
  c.reconciler = std::make_unique<Reconciler>(
      ReconcilerDeps{*c.loop, *c.workers, *c.store, hub_client, *c.lister, *c.clusters, *c.outbox,
                     *c.metrics, clock, c.resource_exists,
#if MMI_DISPATCHER_WITH_MANIFESTS
                     c.manifest_renderer.get()
#else
                     nullptr
#endif
      },
      settings_.reconciler);
  c.clusters->SetOnAdded(
      [r = c.reconciler.get()](const std::string& cluster) { r->OnClusterAdded(cluster); });
  c.app_handler = std::make_unique<AppEventHandler>(
      [reconciler = c.reconciler.get()](const std::string& key, bool urgent) {
        reconciler->Enqueue(key, urgent);
      });
  c.cluster_informer->AddHandler(*c.clusters);
  c.app_informer->AddHandler(*c.app_handler);
  c.deletion = std::make_unique<store::postgres::PostgresDeletionListener>(
      store::postgres::DeletionListenerSettings{.dsn = settings_.store.dsn}, *c.store);
  if (c.subscriber) {
    c.resync = std::make_unique<SpecResyncResponder>(
        settings_.reconciler.payload.source_id, *c.workers, *c.store, *c.publisher, clock,
        *c.metrics, [r = c.reconciler.get()](const std::string& id) { return r->IsDeleting(id); });
  }
}

// Admin endpoint: checks only read atomics or cached state. Readiness is about dependencies,
// so a standby replica is ready; leadership is the mmi_leader_election_is_leader gauge.
void DispatcherApp::AddHealthChecks(Clock& clock) {
  Components& c = *c_;
  c.admin = service::MakeAdminServer(settings_.admin_listen, c.registry, *c.publisher);
  c.admin->AddLivenessCheck("reconcile-loop", [&c, &clock] {
    const int64_t beat = c.loop_heartbeat_ns.load();
    const int64_t now = clock.MonotonicNow().time_since_epoch().count();
    if (beat != 0 && now - beat > std::chrono::nanoseconds(std::chrono::seconds(60)).count()) {
      return absl::UnavailableError("the reconcile loop has not run for over 60s");
    }
    return absl::OkStatus();
  });
  c.admin->AddReadinessCheck("hub", [&c] {
    if (!c.app_informer->HasSynced() || !c.cluster_informer->HasSynced()) {
      return absl::UnavailableError("Application/ManagedCluster caches not synced yet");
    }
    return absl::OkStatus();
  });
  c.admin->AddReadinessCheck("store", [this, &c] {
    if (!leading_.load()) {
      return absl::OkStatus();  // standby: nothing loaded yet by design
    }
    if (!c.reconciler->loaded()) {
      return absl::UnavailableError("dispatch state not loaded from PostgreSQL yet");
    }
    if (!c.deletion->connected()) {
      return absl::UnavailableError("PostgreSQL LISTEN connection down");
    }
    return absl::OkStatus();
  });
  if (c.gitops) {
    c.admin->AddReadinessCheck("gitopscluster", [this, &c] {
      if (leading_.load() && !c.gitops->synced()) {
        return absl::UnavailableError("GitOpsCluster caches not synced yet");
      }
      return absl::OkStatus();
    });
  }
}

void DispatcherApp::StartLeading() {
  if (c_ == nullptr || c_->leading_started.exchange(true) || stopping_.load()) {
    return;
  }
  Components& c = *c_;
  leading_.store(true);
  Log().Info("leading: dispatching");
  c.deletion->Start(
      [r = c.reconciler.get()](const std::string& id) { r->OnDeletionConfirmed(id); });
  c.reconciler->Activate();
  if (c.subscriber) {
    absl::Status s = c.subscriber->Start(
        [&c](cloudevents::Event event, transport::AckFn ack) {
          if (event.type != cloudevents::kSpecResyncRequestType) {
            std::move(ack)();  // status events belong to the status sink
            return;
          }
          // shared_ptr: std::function needs a copyable callable; the ack is move-only.
          auto shared_ack = std::make_shared<transport::AckFn>(std::move(ack));
          c.resync->Handle(std::move(event), [shared_ack] { std::move (*shared_ack)(); });
        },
        [&c](bool resubscribed) {
          // What the broker accepted just before the connection was lost may be gone with it,
          // and agents that reconnected first asked for their specs while no one listened.
          if (resubscribed) {
            c.loop->Post([&c] { c.resync->Replay(c.outbox->TakeRecentlyAccepted()); });
          }
        });
    if (!s.ok()) {
      Log().Error("cannot start the spec resync subscription",
                  {{"error", std::string(s.message())}});
    }
  }
  if (c.gitops) {
    if (absl::Status s = c.gitops->Start(); !s.ok()) {
      Log().Error("cannot start the GitOpsCluster controller",
                  {{"error", std::string(s.message())}});
    }
  }
}

void DispatcherApp::OnLostLeadership() {
  if (stopping_.load() || !leading_.load()) {
    return;
  }
  Log().Error("lost leadership; stopping all writes and exiting so that the pod restarts");
  leading_.store(false);
  if (c_ && c_->reconciler) {
    c_->reconciler->Deactivate();
  }
  stop_.Request(1);  // Kubernetes restarts the pod, as controller-runtime does
}

void DispatcherApp::RequestStop() { stop_.Request(0); }

int DispatcherApp::Wait() { return stop_.Wait(); }

bool DispatcherApp::DrainOutbox(Components& c, std::chrono::steady_clock::time_point deadline) {
  std::optional<std::chrono::steady_clock::time_point> down_since;
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    if (c.outbox->WaitDrained(std::chrono::milliseconds(100))) {
      Log().Info("outbox drained");
      return true;
    }
    if (c.publisher->connected()) {
      down_since.reset();
    } else if (!down_since) {
      down_since = now;
    } else if (now - *down_since >= kDeadPeerGrace) {
      Log().Warn(
          "the transport is disconnected; not waiting for the outbox (the rest is published on "
          "the next start)",
          {{"pending", static_cast<int64_t>(c.outbox->pending())}});
      return false;
    }
    if (now >= deadline) {
      Log().Warn(
          "outbox not drained before the shutdown timeout; the rest is published on the "
          "next start",
          {{"pending", static_cast<int64_t>(c.outbox->pending())}});
      return false;
    }
  }
}

bool DispatcherApp::Stop() {
  if (stopped_ || c_ == nullptr) {
    return true;
  }
  stopped_ = true;
  stopping_.store(true);
  Components& c = *c_;
  const auto deadline = std::chrono::steady_clock::now() + settings_.shutdown_timeout;
  Log().Info("stopping: intake first, then draining the outbox");
  // 1. Stop intake.
  if (c.app_informer) {
    c.app_informer->Stop();
  }
  if (c.cluster_informer) {
    c.cluster_informer->Stop();
  }
#if MMI_DISPATCHER_WITH_MANIFESTS
  if (c.secret_informer) {
    c.secret_informer->Stop();
  }
#endif
  if (c.subscriber) {
    c.subscriber->Stop();
  }
  if (c.gitops) {
    c.gitops->Stop();
  }
  if (c.reconciler) {
    c.reconciler->Deactivate();
    // 2. Decisions already handed to the store complete.
    while (c.reconciler->busy() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // 3. Drain the outbox, but not towards a peer that is gone: what is left stays recorded in
  // PostgreSQL and is published on the next start.
  bool drained = true;
  if (c.outbox) {
    drained = DrainOutbox(c, deadline);
  }
  // 4. Everything else, in reverse order of start.
  if (c.deletion) {
    c.deletion->Stop();
  }
  if (c.publisher) {
    c.publisher->Stop();
  }
  if (c.loop) {
    c.loop->Stop();
  }
#if MMI_DISPATCHER_WITH_MANIFESTS
  if (c.render_workers) {
    c.render_workers->Stop();  // after the loop: their answers post to it
  }
#endif
  if (c.workers) {
    c.workers->Stop();
  }
  if (c.leader) {
    c.leader->Stop();  // releases the Lease only now that nothing writes any more
  }
  if (c.admin) {
    c.admin->Stop();
  }
  leading_.store(false);
  Log().Info("stopped");
  return drained;
}

int DispatcherApp::admin_port() const { return c_ && c_->admin ? c_->admin->port() : 0; }

size_t DispatcherApp::outbox_pending() const {
  return c_ && c_->outbox ? c_->outbox->pending() : 0;
}

bool DispatcherApp::dispatching() const { return c_ && c_->reconciler && c_->reconciler->active(); }

int DispatcherMain(int argc, char** argv) {
  return service::ServiceMain<DispatcherApp>("dispatcher", Log(), argc, argv, LoadSettings);
}

}  // namespace mmi::dispatcher
