// The status sink's intake, on its loop: decodes each status event (decoding/decode.h), finds
// the resource's hub Application (HubApps, which batches the lookups), refuses a report from a
// cluster the resource was not dispatched to, and offers the report to the Coalescer. Every drop
// is counted (mmi_status_events_dropped_total) and its ack called; a report dropped for want of
// room is handed to the StatusResync as lost, and summed up in the log (LogUnlogged).
//
// Manifest delivery: an event without the Application's status feedback is kept as the agent's
// ManifestBundle status (DecodeBundleReport) until its lookup says the resource is in manifest
// delivery; ManifestStatuses then builds the hub status, which is offered like any other. For
// any other resource it is dropped as before (no_feedback). The event of a resource whose cached
// record is in manifest delivery is decoded as a bundle alone (DecodeStatusOrBundleReport).
//
// A render change without an agent event (RenderChanged: the dispatcher's new revision, render
// error or its end, for a resource whose record was just read again) is mapped again from the
// resource's last agent report (ManifestStatuses::Rebuild) and offered to the coalescer like a
// report: coalesced per resource, bounded by its max_pending, written by the same writers. When
// no report is held, the resource's agent is asked for it (the lost-report status resync).
// Either way its last status hash is forgotten, so the agent's next report is no duplicate.
//
// A report whose `dispatchVersion` is no dispatch version (StatusReport::acked_version_error) is
// used without its acknowledgement, counted (mmi_status_acks_malformed_total) and summed up in
// the log: to the dispatcher's AckCheck the version stays unacknowledged.
//
// Not thread-safe: owned by the sink's loop thread. Collaborators are borrowed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "libs/cloudevents/event.h"
#include "libs/common/clock.h"
#include "libs/common/log_summary.h"
#include "libs/store/status_store.h"
#include "services/status-sink/coalescing/coalescer.h"
#include "services/status-sink/intake/hub_apps.h"
#include "services/status-sink/intake/manifest_statuses.h"
#include "services/status-sink/metrics/metrics.h"
#include "services/status-sink/resync/status_resync.h"

namespace mmi::status_sink {

struct IntakeSettings {
  bool ignore_resource_health_messages = false;  // CoalescerSettings, for the material hash
  std::size_t max_pending = 50'000;              // CoalescerSettings::max_pending, for the log
};

class Intake {
 public:
  // `admitted` runs after each report offered to the coalescer (the sink starts writes then).
  // `manifests` (nullable, borrowed) builds the statuses of resources in manifest delivery;
  // without it their reports are dropped as no_feedback.
  Intake(IntakeSettings settings, Coalescer& coalescer, HubApps& hub_apps, StatusResync& resync,
         const Clock& clock, SinkMetrics& metrics, absl::AnyInvocable<void()> admitted,
         ManifestStatuses* manifests = nullptr);

  // One event from the transport: decoded, then admitted or queued for its resource lookup.
  void Handle(const cloudevents::Event& event, Ack ack);
  // A report whose hub Application is `ref` (HubApps::Found).
  void Admit(const store::HubAppRef& ref, AwaitingReport item);
  // The manifest render of `ref` changed (its record read again); nothing for a resource back
  // in Application delivery (its spoke Argo CD reports).
  void RenderChanged(const store::HubAppRef& ref);

  // Whether LogUnlogged() has something to say; LogUnlogged() writes one line summing the reports
  // shed, overflowed and without their manifests since the last one, and resets the counts.
  bool HasUnlogged() const {
    return unlogged_.shed > 0 || unlogged_.overflowed > 0 || unlogged_.manifests_not_held > 0;
  }
  void LogUnlogged();
  // Logs the summed-up warnings that are due.
  void FlushWarnings();

 private:
  // A report without an Application status: built for a resource in manifest delivery (true),
  // else dropped or looked up again (false: the item is taken care of).
  bool BuildManifestStatus(const store::HubAppRef& ref, AwaitingReport& item);
  // Whether the resource `event` reports on is known (its cached record) to be in manifest
  // delivery; O(1).
  bool KnownInManifestDelivery(const cloudevents::Event& event) const;
  // What every Offer() of `ref`'s update is followed by: its released acks, the volatile
  // reports it shed, and an overflow remembered as lost (the agent is asked again).
  void Settle(const store::HubAppRef& ref, Coalescer::OfferOutcome& outcome);
  // Counts what became of a received report (coalesced, stale, duplicate, unchanged).
  void CountOffer(const Coalescer::OfferOutcome& outcome);
  void Overflowed(const std::string& resource_id, const std::string& cluster);

  const IntakeSettings settings_;
  Coalescer& coalescer_;
  HubApps& hub_apps_;
  StatusResync& resync_;
  SinkMetrics& metrics_;
  absl::AnyInvocable<void()> admitted_;
  ManifestStatuses* manifests_;
  // Per-event warnings about bad or unmatched input, summed up (log_summary.h): an agent that
  // misbehaves cannot flood the log. The metrics count every event.
  log::WarnSummary malformed_;
  log::WarnSummary malformed_ack_;
  log::WarnSummary wrong_cluster_;
  log::WarnSummary other_application_;
  // Counts since the last LogUnlogged(): one warning per interval instead of one per report,
  // which at fleet scale would be thousands a second.
  struct Unlogged {
    uint64_t shed = 0;
    uint64_t overflowed = 0;
    uint64_t manifests_not_held = 0;
  };
  Unlogged unlogged_;
};

}  // namespace mmi::status_sink
