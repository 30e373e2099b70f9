#include "bench/sink/status_events.h"

#include <chrono>
#include <cstdio>
#include <utility>

#include "bench/common/app_status.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"
#include "nlohmann/json.hpp"

namespace mmi::bench {
namespace {

using nlohmann::json;

// A fixed agent clock, so that runs are comparable: 2026-06-01T10:00:00Z.
constexpr std::int64_t kBaseUnixSeconds = 1'780'308'000;

std::string Rfc3339(std::int64_t unix_seconds) {
  const std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The Application's `.status` with `entries` synced resources; `n` moves reconciledAt.
json AppStatus(std::size_t entries, std::size_t n) {
  json resources = json::array();
  for (std::size_t i = 0; i < entries; ++i) {
    resources.push_back(SyncedDeploymentStatus(i));
  }
  return {
      {"health", {{"status", "Healthy"}}},
      {"reconciledAt", Rfc3339(kBaseUnixSeconds + static_cast<std::int64_t>(n))},
      {"sourceType", "Directory"},
      {"resources", std::move(resources)},
      {"sync", {{"revision", "53e28ff20cc530b9ada2173fbbd64d48338583ba"}, {"status", "Synced"}}}};
}

json Condition(const char* type, const char* reason, const char* message) {
  return {{"type", type},
          {"status", "True"},
          {"observedGeneration", 1},
          {"lastTransitionTime", "2026-06-01T10:00:04Z"},
          {"reason", reason},
          {"message", message}};
}

json StatusData(const std::string& app, const json& app_status) {
  json feedback = {{"name", "status"},
                   {"fieldValue", {{"type", "JsonRaw"}, {"jsonRaw", app_status.dump()}}}};
  // The end-to-end acknowledgement's value (the dispatcher's `dispatch-version` annotation).
  json dispatch_version = {{"name", "dispatchVersion"},
                           {"fieldValue", {{"type", "String"}, {"string", "1"}}}};
  json manifest = {
      {"resourceMeta",
       {{"ordinal", 0},
        {"group", "argoproj.io"},
        {"version", "v1alpha1"},
        {"kind", "Application"},
        {"resource", "applications"},
        {"name", app},
        {"namespace", "openshift-gitops"}}},
      {"statusFeedback", {{"values", json::array({feedback, dispatch_version})}}},
      {"conditions",
       json::array({Condition("Applied", "AppliedManifestComplete", "Apply manifest complete"),
                    Condition("StatusFeedbackSynced", "StatusFeedbackSynced", "")})}};
  return {{"conditions",
           json::array(
               {Condition("Applied", "AppliedManifestWorkComplete", "Apply manifest work complete"),
                Condition("Available", "ResourcesAvailable", "All resources are available")})},
          {"resourceStatus", json::array({manifest})}};
}

// The ManifestWork metadata the agent echoes (hub-apis.md §5.1 annotations).
std::string Metadata(const std::string& id, const std::string& cluster, const std::string& app) {
  return json{
      {"name", id},
      {"namespace", cluster},
      {"uid", id},
      {"generation", 1},
      {"creationTimestamp", "2026-06-01T10:00:00Z"},
      {"labels",
       {{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster", "true"},
        {"cloudevents.open-cluster-management.io/originalsource", "maestro"}}},
      {"annotations",
       {{"apps.open-cluster-management.io/hub-application-name", app},
        {"apps.open-cluster-management.io/hub-application-namespace", kBenchHubNamespace},
        {"cloudevents.open-cluster-management.io/datatype",
         "io.open-cluster-management.works.v1alpha1.manifestbundles"}}},
      {"finalizers", json::array({"cluster.open-cluster-management.io/manifest-work-cleanup"})}}
      .dump();
}

// A bundle of rendered manifests (manifest delivery): `manifests` Deployments, each with the
// WellKnownStatus values and the conditions the agent reports for one; no Application.
json ManifestBundleData(std::size_t manifests, std::size_t n) {
  json statuses = json::array();
  for (std::size_t i = 0; i < manifests; ++i) {
    const auto ready = static_cast<std::int64_t>(1 + ((n + i) % 3));  // moves with the event
    json values = json::array();
    for (const auto& [name, value] : {std::pair<const char*, std::int64_t>{"ReadyReplicas", ready},
                                      {"Replicas", 3},
                                      {"AvailableReplicas", ready}}) {
      values.push_back({{"name", name}, {"fieldValue", {{"type", "Integer"}, {"integer", value}}}});
    }
    statuses.push_back(
        {{"resourceMeta",
          {{"ordinal", static_cast<std::int64_t>(i)},
           {"group", "apps"},
           {"version", "v1"},
           {"kind", "Deployment"},
           {"resource", "deployments"},
           {"name", "guestbook-ui-" + std::to_string(i)},
           {"namespace", "guestbook"}}},
         {"statusFeedback", {{"values", std::move(values)}}},
         {"conditions",
          json::array({Condition("Applied", "AppliedManifestComplete", "Apply manifest complete"),
                       Condition("Available", "ResourceAvailable", "Resource is available"),
                       Condition("StatusFeedbackSynced", "StatusFeedbackSynced", "")})}});
  }
  return {{"conditions",
           json::array(
               {Condition("Applied", "AppliedManifestWorkComplete", "Apply manifest work complete"),
                Condition("Available", "ResourcesAvailable", "All resources are available")})},
          {"resourceStatus", std::move(statuses)}};
}

cloudevents::Event MakeEvent(const EventShape& shape, std::size_t n, const json& data) {
  const std::size_t r = n % shape.resources;
  const std::string id = BenchResourceId(r);
  const std::string app = BenchAppName(r);
  cloudevents::Event event;
  event.id = "bench-" + std::to_string(n);
  event.source = shape.cluster + "-work-agent";
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time = std::chrono::sys_time<std::chrono::nanoseconds>(
      std::chrono::seconds(kBaseUnixSeconds + static_cast<std::int64_t>(n)));
  event.SetString(cloudevents::kExtClusterName, shape.cluster);
  event.SetString(cloudevents::kExtOriginalSource, shape.source_id);
  event.SetString(cloudevents::kExtResourceId, id);
  event.SetString(cloudevents::kExtResourceVersion, "1");
  event.SetString(cloudevents::kExtMetadata, Metadata(id, shape.cluster, app));
  const std::int64_t millis = (kBaseUnixSeconds * 1000) - cloudevents::kSnowflakeEpochUnixMs;
  // Node 1, step n: strictly increasing per resource as n grows.
  event.SetString(cloudevents::kExtSequenceId,
                  cloudevents::SequenceId::FromParts(millis + static_cast<std::int64_t>(n / 4096),
                                                     1, static_cast<std::int64_t>(n % 4096))
                      ->ToString());
  event.SetString(cloudevents::kExtStatusHash, *cloudevents::StatusHashOfData(data));
  event.data = data.dump();
  return event;
}

std::size_t PayloadSize(const cloudevents::Event& event) {
  return event.data.has_value() ? event.data->size() : 0;
}

// The least count from `first` (at most `limit`) whose event `make(count)` has a payload of
// shape.target_bytes or more.
template <typename Make>
std::size_t CountForSize(const EventShape& shape, std::size_t first, std::size_t limit,
                         const Make& make) {
  std::size_t count = first;
  while (PayloadSize(make(count)) < shape.target_bytes && count < limit) {
    ++count;
  }
  return count;
}

}  // namespace

std::string BenchResourceId(std::size_t r) {
  char text[40];
  std::snprintf(text, sizeof(text), "b0000000-0000-5000-8000-%012zu", r);
  return text;
}

std::string BenchAppName(std::size_t r) { return "bench-app-" + std::to_string(r); }

std::size_t EntriesForSize(const EventShape& shape) {
  return CountForSize(shape, 0, 100'000,
                      [&](std::size_t entries) { return BenchStatusEvent(shape, entries, 0); });
}

cloudevents::Event BenchStatusEvent(const EventShape& shape, std::size_t entries, std::size_t n) {
  return MakeEvent(shape, n, StatusData(BenchAppName(n % shape.resources), AppStatus(entries, n)));
}

std::size_t ManifestsForSize(const EventShape& shape) {
  return CountForSize(shape, 1, 10'000, [&](std::size_t manifests) {
    return BenchManifestStatusEvent(shape, manifests, 0);
  });
}

cloudevents::Event BenchManifestStatusEvent(const EventShape& shape, std::size_t manifests,
                                            std::size_t n) {
  return MakeEvent(shape, n, ManifestBundleData(manifests, n));
}

}  // namespace mmi::bench
