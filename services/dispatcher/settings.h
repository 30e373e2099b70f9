// Everything the dispatcher can be configured with, in one struct, with its defaults.
// Sources, weakest first: the defaults below < the YAML config file (--config) < environment
// (secrets and pod identity) < command-line flags. Only main.cc / dispatcher_app.cc read them.
//
// YAML keys (camelCase) are given in parentheses; see services/dispatcher/README.md for a full
// example. Validation reports every problem with its full field path.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/service/settings.h"
#include "libs/transport/grpc/maestro_rest.h"
#include "libs/transport/settings.h"
#include "services/dispatcher/apps/outbox.h"
#include "services/dispatcher/apps/reconciler.h"
#include "services/dispatcher/gitops/gitops_cluster_controller.h"

namespace mmi::dispatcher {

// (dispatch.firstList) How the Application informer lists on a start. Relists (after a 410) are
// always paged: their watch hands out changes while the pages are read.
enum class FirstList {
  // `streamed` when nothing was ever dispatched (no resource row: a first install, where every
  // Application is dispatched anyway and the changes made meanwhile need not go first), `paged`
  // otherwise (a restart: changes are dispatched while the list is read).
  kAuto,
  // A paged LIST (limit 500) whose watch, opened at the first page, hands out changes at once.
  kPaged,
  // A streamed list (WATCH with sendInitialEvents, from the API server's watch cache): much
  // cheaper for the API server (300,000 Applications in 33 s against ~74 s paged on the fleet
  // bench), but changes made meanwhile are handed out only after it. Falls back to a paged LIST
  // when the API server cannot stream or ends the stream early.
  kStreamed,
};

// (manifests) Manifest delivery (ADR 0007): Applications annotated
// `apps.open-cluster-management.io/delivery: manifests` are rendered by the hub's
// argocd-repo-server and their manifests delivered in a ManifestBundle. Off (the default) while
// repoServer.address is "": such an Application then gets a Warning Event and a ComparisonError
// condition saying manifest delivery is not configured.
struct ManifestDeliverySettings {
  struct RepoServer {
    // (repoServer.address) host:port of argocd-repo-server's gRPC port, e.g.
    // "argocd-repo-server.argocd.svc:8081". "" = manifest delivery off.
    std::string address;
    // (repoServer.tls) What libs/argocd_repo's GrpcRepoServerClient supports: the repo-server
    // serves TLS with a self-signed certificate unless started with --disable-tls.
    struct Tls {
      bool enabled = true;      // (enabled) false for a repo-server run with --disable-tls
      std::string ca_file;      // (caFile) PEM CA to verify the server against; "" = system roots
      std::string server_name;  // (serverName) name to verify; "" = the host of `address`
      // (insecureSkipVerify) accept any certificate, as Argo CD's controller does by default
      // (without --repo-server-strict-tls). Default false: verify.
      bool insecure_skip_verify = false;
    } tls;
  } repo_server;
  // (resolveInterval) How long a resolved revision is used before ResolveRevision is asked
  // again: Argo CD's reconciliation interval, 180 s. The hub's argocd.argoproj.io/refresh
  // resolves at once.
  std::chrono::milliseconds resolve_interval{std::chrono::seconds(180)};
  // (renderTimeout) Deadline of each repo-server call, as the controller's
  // --repo-server-timeout-seconds (60 s). A timeout keeps the last good bundle.
  std::chrono::milliseconds render_timeout{std::chrono::seconds(60)};
  // (argocdNamespace) Where Argo CD keeps its repository Secrets (labelled
  // argocd.argoproj.io/secret-type: repository | repo-creds); the dispatcher watches them.
  std::string argocd_namespace = "argocd";
  // (maxRendersInFlight) Repo-server calls running at once, each on its own thread.
  int max_renders_in_flight = 4;

  bool enabled() const { return !repo_server.address.empty(); }
};

struct DispatcherSettings {
  std::string log_level = "info";  // (logLevel) debug|info|warn|error
  // (watchNamespace) Applications of this namespace only; "" = every namespace.
  std::string watch_namespace;
  std::string admin_listen = "0.0.0.0:8080";  // (admin.listenAddress) /metrics /healthz /readyz
  // (kube), (store), (leaderElection): the sections shared with the status sink
  // (libs/service/settings.h), with the dispatcher's defaults.
  service::HubSettings kube{.qps = 50, .burst = 100};
  service::StoreSettings store;
  service::LeaderSettings leader{.lease_name = "mmi-dispatcher"};
  // (transport) `type: mqtt|grpc|kafka` plus one section per type (libs/transport/settings.h).
  // The transport's sourceId is also the source id of every resource id (payload).
  transport::TransportSettings transport;
  ReconcilerSettings reconciler;  // (dispatch)
  // (maestroRest) Maestro's REST API, gRPC transport only: `url` (default "" = off; Maestro's
  // Service `maestro`, e.g. http://maestro.maestro.svc.cluster.local:8000), `timeout` (10s),
  // `tls` (caFile, clientCertFile, clientKeyFile; on for an https:// url) and the bearer token
  // from MMI_MAESTRO_REST_TOKEN. Each resend of an unconfirmed delete request asks it for the
  // resource bundle (a 404 confirms the deletion: apps/deletion_check.h), within
  // reconciler.deletion_check's bounds (maxRequestsPerSecond 20, maxInFlight 2, maxQueued
  // 100000, errorPause 30s, read from the same section).
  transport::MaestroRestSettings maestro_rest{.base_url = ""};
  // (outbox) markLinger 20 ms: see OutboxSettings::mark_linger.
  OutboxSettings outbox{.mark_linger = std::chrono::milliseconds(20)};
  int workers = 4;  // (dispatch.workers) worker pool threads (store, hub writes)
  // (dispatch.specResync) answer agents' spec resync requests (MQTT, Kafka; gRPC never gets
  // them).
  bool spec_resync = true;
  // (dispatch.compactInformerStorage) keep cached Applications as MessagePack (less memory:
  // 202 against 512 MiB peak at 30,000, same dispatch rate; bench/fleet/README.md).
  bool compact_informer_storage = true;
  // (dispatch.firstListByPages) on a start, decide the Applications of the Application list's
  // pages as they arrive rather than once the list is complete (a paged list only: with it
  // firstList auto lists in pages): the first ones go out within
  // seconds, but dispatch (and the status writes it sets off) then competes with the list for
  // the API server; at 300,000 on the fleet bench's 2-core machine all were published after
  // ~300 s against 169-183 s without it (bench/fleet/README.md).
  bool first_list_by_pages = false;
  // (dispatch.firstList) auto | paged | streamed: see FirstList and ChooseFirstList().
  FirstList first_list = FirstList::kAuto;
  // (shutdownTimeout) graceful drain budget on SIGTERM; keep below
  // terminationGracePeriodSeconds.
  std::chrono::milliseconds shutdown_timeout{25'000};
  bool gitops_cluster_enabled = true;              // (gitopsCluster.enabled)
  GitOpsClusterControllerSettings gitops_cluster;  // (gitopsCluster)
  ManifestDeliverySettings manifests;              // (manifests)
};

// Parses the YAML config file text over the defaults. kInvalidArgument naming the field path of
// every bad value and of every unknown key.
absl::StatusOr<DispatcherSettings> ParseSettingsYaml(std::string_view yaml);

// Applies environment values (`getenv` is injected for tests): MMI_STORE_DSN,
// MMI_TRANSPORT_PASSWORD (MQTT password / Kafka SASL password), MMI_TRANSPORT_TOKEN (gRPC bearer
// token), MMI_MAESTRO_REST_TOKEN (Maestro REST bearer token), POD_NAME, POD_NAMESPACE, KUBECONFIG,
// KUBERNETES_SERVICE_HOST/PORT.
using EnvLookup = service::EnvLookup;
void ApplyEnvironment(DispatcherSettings& settings, const EnvLookup& env);

// Fills derived defaults (identity, lease namespace, the dispatcher's own MQTT share group and
// Kafka consumer group so it never takes status events from the status sink) and validates.
absl::Status FinalizeSettings(DispatcherSettings& settings);

// flags (CLI11) + file + environment, then FinalizeSettings(). `--help` returns kCancelled
// with the help text as message.
absl::StatusOr<DispatcherSettings> LoadSettings(int argc, const char* const* argv,
                                                const EnvLookup& env);

// One line for the start-up log, secrets redacted.
std::string SettingsSummary(const DispatcherSettings& settings);
// "auto", "paged" or "streamed" (the YAML value).
const char* FirstListName(FirstList first_list);

// Whether the Application informer's first list streams, and why (for the log).
struct FirstListChoice {
  bool streamed = false;
  std::string why;
  bool warn = false;  // the store could not be asked: paged, the safe choice
};
// `has_resources` (DispatchStore::HasResources) is asked only for `auto` without
// firstListByPages, which delivers the pages of a paged list as they arrive and so asks for one.
FirstListChoice ChooseFirstList(const DispatcherSettings& settings,
                                const std::function<absl::StatusOr<bool>()>& has_resources);

}  // namespace mmi::dispatcher
