// What the dispatcher sends for one hub Application: selection (which Applications are pull
// model), the Application rewritten for the managed cluster, the ManifestBundle around it, the
// ManifestWork metadata, the resource id and the payload hash
// (../shared/spec/hub-apis.md §5.1-§5.5, ../shared/spec/maestro-protocol.md §2.6, §6.8, §6.10).
//
// Pure functions of their inputs: no I/O, thread-safe. Hub objects are taken as JSON exactly as
// the API server returns them; anything malformed or hostile (a cluster annotation that is not a
// DNS-1123 label, a missing name) is kInvalidArgument naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

// Pull-model keys (hub-apis §5.1).
inline constexpr char kPullLabel[] = "apps.open-cluster-management.io/pull-to-ocm-managed-cluster";
inline constexpr char kClusterAnnotation[] = "apps.open-cluster-management.io/ocm-managed-cluster";
inline constexpr char kAppNamespaceAnnotation[] =
    "apps.open-cluster-management.io/ocm-managed-cluster-app-namespace";
inline constexpr char kSkipReconcileAnnotation[] = "argocd.argoproj.io/skip-reconcile";
inline constexpr char kRefreshAnnotation[] = "argocd.argoproj.io/refresh";
inline constexpr char kHostingAppSetAnnotation[] =
    "apps.open-cluster-management.io/hosting-applicationset";
inline constexpr char kAppSetLabel[] = "apps.open-cluster-management.io/application-set";
inline constexpr char kAppSetHashLabel[] = "apps.open-cluster-management.io/application-set-hash";
inline constexpr char kHubAppNamespaceAnnotation[] =
    "apps.open-cluster-management.io/hub-application-namespace";
inline constexpr char kHubAppNameAnnotation[] =
    "apps.open-cluster-management.io/hub-application-name";
inline constexpr char kResourcesFinalizer[] = "resources-finalizer.argocd.argoproj.io";
// The end-to-end acknowledgement (docs/reliability.md, finding 6): every spec event stamps the
// dispatcher's version of the resource into this annotation of the spoke Application, and the
// manifest's feedback rule reads it back as `kDispatchVersionFeedback`, so the status stream says
// which version the agent applied, whatever Maestro's table says. Not part of payload_hash: the
// stamp changes with the version, not with the content.
inline constexpr char kDispatchVersionAnnotation[] =
    "apps.open-cluster-management.io/dispatch-version";
inline constexpr char kDispatchVersionFeedback[] = "dispatchVersion";
// The feedback path: Kubernetes JSONPath, the dots of the annotation key escaped.
inline constexpr char kDispatchVersionPath[] =
    R"(.metadata.annotations.apps\.open-cluster-management\.io/dispatch-version)";
inline constexpr char kInClusterServer[] = "https://kubernetes.default.svc";

struct PayloadSettings {
  // CloudEvent source id, part of every resource id (maestro-protocol §6.8). The default is the
  // upstream Go controller's, so a hub moving from it keeps its Maestro resources.
  std::string source_id = "app-work-client";
  // Spoke namespace when neither the app-namespace annotation nor the hub namespace gives one.
  std::string default_app_namespace = "openshift-gitops";
  // serverSideApply.force in the update strategy (the upstream Maestro controller: false).
  bool force_server_side_apply = false;
};

// Go strconv.ParseBool: 1 t T TRUE true True 0 f F FALSE false False.
std::optional<bool> ParseGoBool(const std::string& text);

// The target cluster when `app` is a pull-model Application (label parses as true and the
// cluster annotation is non-empty), nullopt otherwise.
std::optional<std::string> PullModelCluster(const nlohmann::json& app);

// The owning ApplicationSet (ownerReference apiVersion argoproj.io/v1alpha1, kind ApplicationSet,
// case-insensitive), if any.
struct AppSetRef {
  std::string namespace_;
  std::string name;
  friend bool operator==(const AppSetRef&, const AppSetRef&) = default;
};
std::optional<AppSetRef> OwningAppSet(const nlohmann::json& app);

struct Dispatch {
  std::string cluster;  // Maestro consumer name
  std::string hub_namespace;
  std::string hub_name;
  std::string hub_uid;
  std::string work_name;    // <hub namespace>-<hub name>
  std::string resource_id;  // UUIDv5 (maestro-protocol §6.8)
  std::optional<AppSetRef> appset;
  cloudevents::ManifestBundle bundle;  // one manifest: the spoke Application
  cloudevents::ObjectMeta work_meta;   // the `metadata` extension (ManifestWork ObjectMeta)
  // Lowercase hex SHA-256 over the canonical JSON of the bundle and the work labels/annotations:
  // equal hashes mean nothing the spoke sees has changed (status writes bump generation but not
  // this).
  std::string payload_hash;
  // The same hash for the payload without the propagated operation and refresh annotation (equal
  // to payload_hash when it carries neither): what the hub shows once the dispatcher stripped them.
  std::string request_free_hash;
  bool carries_operation = false;  // `operation` was propagated: remove it from the hub after
  bool carries_refresh = false;    // the refresh annotation was propagated: remove it after
};

// Builds everything sent for `hub_app` (a pull-model Application; see PullModelCluster).
absl::StatusOr<Dispatch> BuildDispatch(const nlohmann::json& hub_app,
                                       const PayloadSettings& settings);

// What both delivery modes send alike for `hub_app` (a pull-model Application): the cluster, hub
// and ApplicationSet names, the work name, the resource id and the work metadata (labels and
// annotations). The bundle, the hashes and the request flags are left empty for the caller
// (BuildDispatch; manifest delivery's BuildManifestDispatch) to fill.
absl::StatusOr<Dispatch> DispatchIdentityOf(const nlohmann::json& hub_app,
                                            const PayloadSettings& settings);

// Dispatch::payload_hash of that bundle and work metadata.
std::string PayloadHashOf(const cloudevents::ManifestBundle& bundle,
                          const cloudevents::ObjectMeta& work_meta);

// Whether the first manifest of `bundle` is an argoproj.io Application (Application delivery).
bool HoldsApplication(const cloudevents::ManifestBundle& bundle);

// `bundle` with `version` stamped into kDispatchVersionAnnotation of its Application manifest (the
// first manifest, when it is an argoproj.io Application; any other bundle is returned as is).
cloudevents::ManifestBundle StampDispatchVersion(cloudevents::ManifestBundle bundle,
                                                 int32_t version);

// `d` as it is once the dispatcher stripped the propagated operation and refresh annotation from
// the hub: the bundle without them, payload_hash = request_free_hash.
Dispatch WithoutRequest(Dispatch d);

// The Application as the managed cluster gets it (hub-apis §5.4, Maestro variant).
absl::StatusOr<nlohmann::json> BuildSpokeApplication(const nlohmann::json& hub_app,
                                                     const PayloadSettings& settings);

// Lowercase hex SHA-1 of "<namespace>/<name>" (the application-set-hash label).
std::string AppSetHash(const AppSetRef& appset);

}  // namespace mmi::dispatcher
