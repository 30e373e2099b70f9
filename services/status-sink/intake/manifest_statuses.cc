#include "services/status-sink/intake/manifest_statuses.h"

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

}  // namespace mmi::status_sink
