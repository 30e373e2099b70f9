#include "services/dispatcher/apps/payload.h"

#include <openssl/evp.h>

#include <array>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/kube_object/object.h"

namespace mmi::dispatcher {

using kube::IsDns1123Label;
using kube::ObjectAt;
using kube::StringAt;
using nlohmann::json;

namespace {

std::string Sha1Hex(const std::string& text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &len, EVP_sha1(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  return out;
}

// The bundle as the hub shows it once the dispatcher stripped the propagated request: the spoke
// Application without `operation` and the refresh annotation.
cloudevents::ManifestBundle BundleWithoutRequest(cloudevents::ManifestBundle bundle) {
  json& app = bundle.manifests.at(0);
  app.erase("operation");
  if (auto meta = app.find("metadata"); meta != app.end() && meta->contains("annotations")) {
    json& annotations = (*meta)["annotations"];
    annotations.erase(kRefreshAnnotation);
    if (annotations.empty()) {
      meta->erase("annotations");
    }
  }
  return bundle;
}

}  // namespace

std::optional<bool> ParseGoBool(const std::string& text) {
  static const char* const kTrue[] = {"1", "t", "T", "TRUE", "true", "True"};
  static const char* const kFalse[] = {"0", "f", "F", "FALSE", "false", "False"};
  for (const char* t : kTrue) {
    if (text == t) {
      return true;
    }
  }
  for (const char* f : kFalse) {
    if (text == f) {
      return false;
    }
  }
  return std::nullopt;
}

std::optional<std::string> PullModelCluster(const json& app) {
  const json& meta = ObjectAt(app, "metadata");
  const auto pull = ParseGoBool(StringAt(ObjectAt(meta, "labels"), kPullLabel));
  if (!pull.value_or(false)) {
    return std::nullopt;
  }
  std::string cluster = StringAt(ObjectAt(meta, "annotations"), kClusterAnnotation);
  if (cluster.empty()) {
    return std::nullopt;
  }
  return cluster;
}

std::optional<AppSetRef> OwningAppSet(const json& app) {
  const json& meta = ObjectAt(app, "metadata");
  auto refs = meta.find("ownerReferences");
  if (refs == meta.end() || !refs->is_array()) {
    return std::nullopt;
  }
  for (const json& ref : *refs) {
    if (absl::AsciiStrToLower(StringAt(ref, "apiVersion")) == "argoproj.io/v1alpha1" &&
        absl::AsciiStrToLower(StringAt(ref, "kind")) == "applicationset" &&
        !StringAt(ref, "name").empty()) {
      return AppSetRef{StringAt(meta, "namespace"), StringAt(ref, "name")};
    }
  }
  return std::nullopt;
}

std::string AppSetHash(const AppSetRef& appset) {
  return Sha1Hex(absl::StrCat(appset.namespace_, "/", appset.name));
}

absl::StatusOr<json> BuildSpokeApplication(const json& hub_app, const PayloadSettings& settings) {
  if (!hub_app.is_object()) {
    return absl::InvalidArgumentError("Application is not a JSON object");
  }
  const json& meta = ObjectAt(hub_app, "metadata");
  const std::string name = StringAt(meta, "name");
  if (name.empty()) {
    return absl::InvalidArgumentError("Application has no metadata.name");
  }
  const auto appset = OwningAppSet(hub_app);

  std::string spoke_namespace = StringAt(ObjectAt(meta, "annotations"), kAppNamespaceAnnotation);
  if (spoke_namespace.empty()) {
    spoke_namespace = StringAt(meta, "namespace");
  }
  if (spoke_namespace.empty()) {
    spoke_namespace = settings.default_app_namespace;
  }
  if (!IsDns1123Label(spoke_namespace)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Application ", name, ": spoke namespace '", spoke_namespace, "' (annotation ",
                     kAppNamespaceAnnotation, " or metadata.namespace) is not a DNS-1123 label"));
  }

  json labels = json::object();
  for (const auto& [k, v] : ObjectAt(meta, "labels").items()) {
    if (k != kPullLabel) {
      labels[k] = v;
    }
  }
  json annotations = json::object();
  for (const auto& [k, v] : ObjectAt(meta, "annotations").items()) {
    if (k != kClusterAnnotation && k != kAppNamespaceAnnotation && k != kSkipReconcileAnnotation) {
      annotations[k] = v;
    }
  }
  if (appset) {
    labels[kAppSetLabel] = "true";
    annotations[kHostingAppSetAnnotation] = absl::StrCat(appset->namespace_, "/", appset->name);
  }

  json spoke_meta = {{"name", name}, {"namespace", spoke_namespace}};
  if (!labels.empty()) {
    spoke_meta["labels"] = std::move(labels);
  }
  if (!annotations.empty()) {
    spoke_meta["annotations"] = std::move(annotations);
  }
  auto finalizers = meta.find("finalizers");
  if (finalizers != meta.end() && finalizers->is_array() && !finalizers->empty()) {
    spoke_meta["finalizers"] = *finalizers;
  }

  json spec = ObjectAt(hub_app, "spec");
  json& destination = spec["destination"];
  if (!destination.is_object()) {
    destination = json::object();
  }
  destination["name"] = "";
  destination["server"] = kInClusterServer;

  json spoke = {{"apiVersion", "argoproj.io/v1alpha1"},
                {"kind", "Application"},
                {"metadata", std::move(spoke_meta)},
                {"spec", std::move(spec)}};
  auto operation = hub_app.find("operation");
  if (operation != hub_app.end() && operation->is_object()) {
    spoke["operation"] = *operation;
  }
  return spoke;
}

std::string PayloadHashOf(const cloudevents::ManifestBundle& bundle,
                          const cloudevents::ObjectMeta& work_meta) {
  const json hashed = {{"bundle", cloudevents::ToJson(bundle)},
                       {"labels", work_meta.labels},
                       {"annotations", work_meta.annotations}};
  return cloudevents::Sha256Hex(hashed.dump());
}

absl::StatusOr<Dispatch> DispatchIdentityOf(const json& hub_app, const PayloadSettings& settings) {
  const auto cluster = PullModelCluster(hub_app);
  if (!cluster) {
    return absl::InvalidArgumentError(absl::StrCat("not a pull-model Application: needs label ",
                                                   kPullLabel, "=true and a non-empty annotation ",
                                                   kClusterAnnotation));
  }
  const json& meta = ObjectAt(hub_app, "metadata");
  Dispatch d;
  d.cluster = *cluster;
  d.hub_namespace = StringAt(meta, "namespace");
  d.hub_name = StringAt(meta, "name");
  d.hub_uid = StringAt(meta, "uid");
  if (!IsDns1123Label(d.cluster)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Application ", d.hub_namespace, "/", d.hub_name, ": annotation ", kClusterAnnotation,
        " = '", d.cluster, "' is not a valid cluster name (DNS-1123 label)"));
  }
  if (d.hub_namespace.empty() || d.hub_name.empty()) {
    return absl::InvalidArgumentError("Application has no metadata.namespace or metadata.name");
  }
  d.appset = OwningAppSet(hub_app);
  d.work_name = absl::StrCat(d.hub_namespace, "-", d.hub_name);
  d.resource_id = cloudevents::WorkResourceId(settings.source_id, d.cluster, d.work_name);

  d.work_meta.name = d.work_name;
  d.work_meta.namespace_ = d.cluster;
  d.work_meta.uid = d.resource_id;
  if (d.appset) {
    d.work_meta.labels[kAppSetLabel] = "true";
    d.work_meta.labels[kAppSetHashLabel] = AppSetHash(*d.appset);
    d.work_meta.annotations[kHostingAppSetAnnotation] =
        absl::StrCat(d.appset->namespace_, "/", d.appset->name);
  } else {
    d.work_meta.labels[kPullLabel] = "true";
  }
  d.work_meta.annotations[kHubAppNamespaceAnnotation] = d.hub_namespace;
  d.work_meta.annotations[kHubAppNameAnnotation] = d.hub_name;
  return d;
}

absl::StatusOr<Dispatch> BuildDispatch(const json& hub_app, const PayloadSettings& settings) {
  absl::StatusOr<Dispatch> identity = DispatchIdentityOf(hub_app, settings);
  if (!identity.ok()) {
    return identity.status();
  }
  Dispatch d = *std::move(identity);
  auto spoke = BuildSpokeApplication(hub_app, settings);
  if (!spoke.ok()) {
    return spoke.status();
  }
  d.carries_operation = spoke->contains("operation");
  d.carries_refresh = spoke->contains("metadata") && (*spoke)["metadata"].contains("annotations") &&
                      (*spoke)["metadata"]["annotations"].contains(kRefreshAnnotation);

  cloudevents::ManifestConfigOption config;
  config.resource_identifier = {.group = "argoproj.io",
                                .resource = "applications",
                                .name = d.hub_name,
                                .namespace_ = (*spoke)["metadata"]["namespace"].get<std::string>()};
  config.feedback_rules.push_back(
      {.type = std::string(cloudevents::kFeedbackJsonPaths),
       .json_paths = {{.name = "status", .version = std::nullopt, .path = ".status"},
                      {.name = kDispatchVersionFeedback,
                       .version = std::nullopt,
                       .path = kDispatchVersionPath}}});
  cloudevents::ServerSideApplyConfig ssa;
  ssa.force = settings.force_server_side_apply;
  cloudevents::IgnoreField ignore;
  ignore.condition = "OnSpokeChange";
  ignore.json_paths = {".operation",
                       absl::StrCat(".metadata.annotations[\"", kRefreshAnnotation, "\"]")};
  ssa.ignore_fields.push_back(std::move(ignore));
  config.update_strategy =
      cloudevents::UpdateStrategy{.type = std::string(cloudevents::kUpdateStrategyServerSideApply),
                                  .server_side_apply = std::move(ssa)};
  d.bundle.manifests.push_back(*std::move(spoke));
  d.bundle.manifest_configs.push_back(std::move(config));

  d.payload_hash = PayloadHashOf(d.bundle, d.work_meta);
  d.request_free_hash = d.carries_operation || d.carries_refresh
                            ? PayloadHashOf(BundleWithoutRequest(d.bundle), d.work_meta)
                            : d.payload_hash;
  return d;
}

bool HoldsApplication(const cloudevents::ManifestBundle& bundle) {
  if (bundle.manifests.empty()) {
    return false;
  }
  const json& app = bundle.manifests.front();
  const auto kind = app.find("kind");
  const auto api_version = app.find("apiVersion");
  return kind != app.end() && *kind == "Application" && api_version != app.end() &&
         api_version->is_string() &&
         api_version->get_ref<const std::string&>().starts_with("argoproj.io/");
}

cloudevents::ManifestBundle StampDispatchVersion(cloudevents::ManifestBundle bundle,
                                                 int32_t version) {
  if (!HoldsApplication(bundle)) {
    return bundle;
  }
  bundle.manifests.front()["metadata"]["annotations"][kDispatchVersionAnnotation] =
      std::to_string(version);
  return bundle;
}

Dispatch WithoutRequest(Dispatch d) {
  if (d.carries_operation || d.carries_refresh) {
    d.bundle = BundleWithoutRequest(std::move(d.bundle));
    d.payload_hash = d.request_free_hash;
    d.carries_operation = false;
    d.carries_refresh = false;
  }
  return d;
}

}  // namespace mmi::dispatcher
