// Manifest delivery (issue #38 §5) on the sink's loop: turns the agent's ManifestBundle status of
// a resource in manifest delivery into the hub Application's `.status` (ApplicationStatusOf,
// manifests/application_status.h) from what the dispatcher recorded (HubAppRef::manifest and
// the rendered manifests, ManifestPayloads), with the times and history the status keeps
// (StatusHistory). The result goes to the coalescer like an Application's reported status.
//
// The hub Application's source and destination: the sink has neither (the dispatcher's table
// holds the bundle, not the Application), so `sync.comparedTo` gets the destination Application
// delivery shows on the hub too (the in-cluster server, which the CRD requires) and no source.
//
// Not thread-safe: owned by the sink's loop thread. Collaborators are borrowed.
#pragma once

#include <string>

#include "libs/common/clock.h"
#include "libs/store/status_store.h"
#include "services/status-sink/decoding/status_report.h"
#include "services/status-sink/intake/manifest_payloads.h"
#include "services/status-sink/manifests/status_history.h"

namespace mmi::status_sink {

enum class ManifestBuild {
  kBuilt,        // `report.update.status` holds the hub status
  kLookUpAgain,  // the resource's record is older than the report, or its manifests are not held
  kInvalid,      // the bundle or the report cannot be mapped (detail says why)
};

class ManifestStatuses {
 public:
  ManifestStatuses(ManifestPayloads& payloads, const Clock& clock)
      : payloads_(payloads), clock_(clock) {}

  // Builds the status of `report` (DecodeBundleReport's, not deleted) for `ref`, which is in
  // manifest delivery. `reread`: `ref` was read again for this report, so a report of a newer
  // bundle generation is mapped against it anyway (the generation shows as not applied yet).
  // On kInvalid `detail` says why.
  ManifestBuild Build(const store::HubAppRef& ref, StatusReport& report, bool reread,
                      std::string& detail);
  // Forgets what a resource kept (deleted).
  void Forget(const std::string& resource_id) { history_.Forget(resource_id); }
  // Thread-safe: the lookups on the store executor load it.
  ManifestPayloads& payloads() const { return payloads_; }

 private:
  ManifestPayloads& payloads_;
  const Clock& clock_;
  StatusHistory history_;
};

}  // namespace mmi::status_sink
