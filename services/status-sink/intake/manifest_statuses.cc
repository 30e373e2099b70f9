#include "services/status-sink/intake/manifest_statuses.h"

#include <iterator>
#include <utility>

#include "services/status-sink/manifests/application_status.h"

namespace mmi::status_sink {
namespace {

// Where Application delivery points the spoke's Application (dispatcher apps/payload.cc), so
// the hub shows the same destination server in both modes.
constexpr char kInClusterServer[] = "https://kubernetes.default.svc";

}  // namespace

ManifestBuild ManifestStatuses::Build(const store::HubAppRef& ref, StatusReport& report,
                                      bool reread, std::string& detail) {
  const store::ManifestRenderRef& render = *ref.manifest;
  // A report of a bundle generation newer than the record: the record was read before the
  // dispatcher recorded that bundle (its notification may still be on the way).
  if (report.bundle_generation > render.version && !reread) {
    return ManifestBuild::kLookUpAgain;
  }
  std::shared_ptr<const Manifests> manifests = payloads_.Find(render.payload_hash);
  if (manifests == nullptr) {
    return ManifestBuild::kLookUpAgain;
  }
  ManifestStatusInput input;
  RenderedBundle bundle;
  bundle.shared_manifests = manifests.get();
  bundle.revision = render.revision;
  bundle.generation = render.version;
  const auto now = clock_.Now();
  bundle.dispatched_at = render.last_published_at.value_or(now);
  input.bundle = std::move(bundle);
  input.report = AgentReport{report.bundle_status.get(), report.bundle_generation};
  input.render_error = render.render_error;
  input.destination = {{"server", kInClusterServer}};
  input.source_type = render.source_type;
  input.now = now;
  auto status = ApplicationStatusOf(input);
  if (!status.ok()) {
    detail = std::string(status.status().message());
    return ManifestBuild::kInvalid;
  }
  history_.Apply(ref.resource_id, *status, now);
  report.update.status = *std::move(status);
  report.update.status_text.clear();
  report.update.material_hash.clear();
  report.bundle_status.reset();  // mapped: not held while the write waits
  return ManifestBuild::kBuilt;
}

HeldReport ManifestStatuses::HeldOf(const StatusReport& report) {
  HeldReport held{.status = {},
                  .generation = report.bundle_generation,
                  .status_hash = report.update.status_hash,
                  .acked_version = report.update.acked_version};
  if (report.bundle_status == nullptr) {
    return held;
  }
  if (!report.bundle_text.empty()) {  // the agent's JSON, without a spec echo
    held.status = report.bundle_text;
    return held;
  }
  absl::StatusOr<std::string> encoded;
  if (report.bundle_status->manifest_bundle.has_value()) {
    cloudevents::ManifestBundleStatus copy = *report.bundle_status;
    copy.manifest_bundle.reset();
    encoded = cloudevents::EncodeManifestBundleStatus(copy);
  } else {
    encoded = cloudevents::EncodeManifestBundleStatus(*report.bundle_status);
  }
  if (encoded.ok()) {  // it was decoded from JSON: it encodes
    held.status = *std::move(encoded);
    held.status.shrink_to_fit();
  }
  return held;
}

void ManifestStatuses::Hold(const std::string& resource_id, HeldReport report) {
  if (report.status.empty() || max_held_ == 0) {
    return;
  }
  if (auto it = held_.find(resource_id); it != held_.end()) {
    it->second.report = std::move(report);
    held_order_.splice(held_order_.end(), held_order_, it->second.order);
    return;
  }
  if (held_.size() >= max_held_) {
    held_.erase(held_order_.front());
    held_order_.pop_front();
  }
  held_order_.push_back(resource_id);
  held_.emplace(resource_id, Held{std::move(report), std::prev(held_order_.end())});
}

std::optional<StatusUpdate> ManifestStatuses::Rebuild(const store::HubAppRef& ref,
                                                      std::string& detail) {
  auto it = held_.find(ref.resource_id);
  if (it == held_.end() || !ref.manifest) {
    return std::nullopt;
  }
  const HeldReport& held = it->second.report;
  auto decoded = cloudevents::DecodeManifestBundleStatus(held.status);
  if (!decoded.ok()) {
    detail = std::string(decoded.status().message());
    return std::nullopt;
  }
  StatusReport report;
  report.update.resource_id = ref.resource_id;
  report.update.status_hash = held.status_hash;
  report.update.acked_version = held.acked_version;
  report.bundle_status =
      std::make_shared<const cloudevents::ManifestBundleStatus>(*std::move(decoded));
  report.bundle_generation = held.generation;
  if (Build(ref, report, /*reread=*/true, detail) != ManifestBuild::kBuilt) {
    return std::nullopt;
  }
  return std::move(report.update);
}

void ManifestStatuses::Forget(const std::string& resource_id) {
  history_.Forget(resource_id);
  if (auto it = held_.find(resource_id); it != held_.end()) {
    held_order_.erase(it->second.order);
    held_.erase(it);
  }
}

}  // namespace mmi::status_sink
