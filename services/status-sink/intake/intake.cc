#include "services/status-sink/intake/intake.h"

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "absl/strings/ascii.h"
#include "services/status-sink/decoding/decode.h"
#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {
Intake::Intake(IntakeSettings settings, Coalescer& coalescer, HubApps& hub_apps,
               StatusResync& resync, const Clock& clock, SinkMetrics& metrics,
               absl::AnyInvocable<void()> admitted, ManifestStatuses* manifests)
    : settings_(settings),
      coalescer_(coalescer),
      hub_apps_(hub_apps),
      resync_(resync),
      metrics_(metrics),
      admitted_(std::move(admitted)),
      manifests_(manifests),
      malformed_(SinkLog(), "dropping malformed status events", clock),
      malformed_ack_(SinkLog(),
                     "status events whose dispatchVersion is no dispatch version; using their "
                     "status without the acknowledgement",
                     clock),
      wrong_cluster_(SinkLog(), "status events from a cluster the resource was not dispatched to",
                     clock),
      other_application_(SinkLog(),
                         "status events whose ManifestWork metadata names another hub "
                         "application; using the dispatcher's record",
                         clock) {}

void Intake::Handle(const cloudevents::Event& event, Ack ack) {
  metrics_.Received();
  // With manifest delivery on, an event without an Application may be a bundle of rendered
  // manifests: the lookup tells. A resource already known to be in the mode has it decoded as a
  // bundle at once, without the one-pass decoder's read that would end in no_feedback.
  auto decoded = manifests_ == nullptr
                     ? DecodeStatusReport(event, settings_.ignore_resource_health_messages)
                     : DecodeStatusOrBundleReport(event, settings_.ignore_resource_health_messages,
                                                  KnownInManifestDelivery(event));
  if (auto* rejection = std::get_if<Rejection>(&decoded)) {
    metrics_.Dropped(rejection->reason);
    if (rejection->reason == DropReason::kMalformed) {
      malformed_.Add(
          event.id,
          {{"event_id", event.id}, {"source", event.source}, {"error", rejection->detail}});
    } else {
      SinkLog().Debug("dropping a status event", {{"event_id", event.id},
                                                  {"reason", DropReasonName(rejection->reason)},
                                                  {"detail", rejection->detail}});
    }
    std::move(ack)();
    return;
  }
  AwaitingReport item{std::get<StatusReport>(std::move(decoded)), std::move(ack)};
  if (!item.report.acked_version_error.empty()) {
    metrics_.AckMalformed();
    malformed_ack_.Add(item.report.event_id, {{"event_id", item.report.event_id},
                                              {"resource", item.report.update.resource_id},
                                              {"cluster", item.report.cluster},
                                              {"error", item.report.acked_version_error}});
  }
  if (const store::HubAppRef* ref = hub_apps_.Find(item.report.update.resource_id)) {
    Admit(*ref, std::move(item));
    return;
  }
  if (hub_apps_.Full()) {
    Overflowed(item.report.update.resource_id, item.report.cluster);
    std::move(item.ack)();
    return;
  }
  hub_apps_.Await(std::move(item));
}

bool Intake::KnownInManifestDelivery(const cloudevents::Event& event) const {
  auto id = event.ResourceId();
  if (!id.ok()) {
    return false;  // the decode rejects it
  }
  const store::HubAppRef* ref = hub_apps_.Find(absl::AsciiStrToLower(*id));
  return ref != nullptr && ref->manifest.has_value();
}

void Intake::Admit(const store::HubAppRef& ref, AwaitingReport item) {
  if (!item.report.cluster.empty() && item.report.cluster != ref.cluster) {
    // A cluster may only report the resources dispatched to it.
    metrics_.Dropped(DropReason::kClusterMismatch);
    wrong_cluster_.Add(item.report.event_id, {{"resource", ref.resource_id},
                                              {"cluster", item.report.cluster},
                                              {"expected_cluster", ref.cluster},
                                              {"event_id", item.report.event_id}});
    std::move(item.ack)();
    return;
  }
  std::optional<HeldReport> held;
  if (item.report.bundle_status != nullptr && !item.report.update.deleted) {
    if (manifests_ != nullptr) {
      held = ManifestStatuses::HeldOf(item.report);  // before the build takes the status
    }
    if (!BuildManifestStatus(ref, item)) {
      return;
    }
    KeepStatusAsText(item.report.update, settings_.ignore_resource_health_messages);
  }
  if (!item.report.metadata_app.empty() &&
      item.report.metadata_app != ref.hub_namespace + "/" + ref.hub_name) {
    other_application_.Add(item.report.event_id,
                           {{"resource", ref.resource_id},
                            {"metadata_application", item.report.metadata_app},
                            {"application", ref.hub_namespace + "/" + ref.hub_name}});
  }
  auto outcome = coalescer_.Offer(std::move(item.report.update), std::move(item.ack));
  if (outcome.result != OfferResult::kStale) {
    // A newer report of it arrived (an overflow is remembered as lost again below).
    resync_.ReportArrived(ref.resource_id, outcome.result == OfferResult::kOverflow);
    if (held) {
      manifests_->Hold(ref.resource_id, *std::move(held));
    }
  }
  Settle(ref, outcome);
  CountOffer(outcome);
  admitted_();
}

void Intake::RenderChanged(const store::HubAppRef& ref) {
  if (!ref.manifest) {
    return;
  }
  coalescer_.ForgetHash(ref.resource_id);
  std::string detail;
  std::optional<StatusUpdate> update =
      manifests_ != nullptr ? manifests_->Rebuild(ref, detail) : std::nullopt;
  if (!update) {
    if (!detail.empty()) {
      malformed_.Add(ref.resource_id, {{"resource", ref.resource_id}, {"error", detail}});
    }
    metrics_.RenderChange(/*rederived=*/false);
    resync_.RememberLost(ref.resource_id, ref.cluster);
    return;
  }
  metrics_.RenderChange(/*rederived=*/true);
  KeepStatusAsText(*update, settings_.ignore_resource_health_messages);
  // No transport ack: nothing waits for this write but the hub.
  auto outcome = coalescer_.Offer(*std::move(update), [] {});
  Settle(ref, outcome);  // an overflow asks the agent, as for a lost report
  admitted_();
}

bool Intake::BuildManifestStatus(const store::HubAppRef& ref, AwaitingReport& item) {
  if (!ref.manifest) {
    // Application delivery: the spoke's Argo CD has not reported yet.
    metrics_.Dropped(DropReason::kNoFeedback);
    std::move(item.ack)();
    return false;
  }
  std::string detail;
  ManifestBuild built = manifests_->Build(ref, item.report, item.looked_up_again, detail);
  if (built == ManifestBuild::kLookUpAgain && !item.looked_up_again) {
    item.looked_up_again = true;
    hub_apps_.Await(std::move(item));  // the lookup replaces the cached record
    return false;
  }
  if (built == ManifestBuild::kLookUpAgain) {
    // Looked up again and still not held: the bundle changed again while its manifests were
    // read. Nothing is wrong with the report: the agent is asked for it again, as for an
    // overflow, so the hub does not wait for the agent's next change.
    metrics_.Dropped(DropReason::kManifestsNotHeld);
    ++unlogged_.manifests_not_held;
    resync_.RememberLost(ref.resource_id, ref.cluster);
    std::move(item.ack)();
    return false;
  }
  if (built != ManifestBuild::kBuilt) {
    metrics_.Dropped(DropReason::kMalformed);
    malformed_.Add(
        item.report.event_id,
        {{"event_id", item.report.event_id}, {"resource", ref.resource_id}, {"error", detail}});
    std::move(item.ack)();
    return false;
  }
  return true;
}

void Intake::Settle(const store::HubAppRef& ref, Coalescer::OfferOutcome& outcome) {
  for (auto& ack : outcome.release) {
    std::move(ack)();
  }
  for (int i = 0; i < outcome.shed; ++i) {
    metrics_.Dropped(DropReason::kVolatileShed);
  }
  unlogged_.shed += static_cast<uint64_t>(outcome.shed);
  if (outcome.result == OfferResult::kOverflow) {
    Overflowed(ref.resource_id, ref.cluster);
  }
}

void Intake::CountOffer(const Coalescer::OfferOutcome& outcome) {
  switch (outcome.result) {
    case OfferResult::kQueued:
    case OfferResult::kOverflow:  // Settle counted it
      break;
    case OfferResult::kCoalesced:
      metrics_.Coalesced();
      break;
    case OfferResult::kStale:
      metrics_.Dropped(DropReason::kStale);
      break;
    case OfferResult::kDuplicate:
      metrics_.Dropped(DropReason::kDuplicate);
      break;
    case OfferResult::kUnchanged:
      metrics_.Dropped(DropReason::kUnchanged);
      break;
  }
}

void Intake::Overflowed(const std::string& resource_id, const std::string& cluster) {
  metrics_.Dropped(DropReason::kOverflow);
  ++unlogged_.overflowed;
  resync_.RememberLost(resource_id, cluster);
}

void Intake::LogUnlogged() {
  if (!HasUnlogged()) {
    return;
  }
  SinkLog().Warn(
      "status reports dropped for want of room: volatile-only writes shed, the rest overflowed "
      "or without their rendered manifests (remembered and asked for again by status resync)",
      {{"volatile_shed", unlogged_.shed},
       {"overflowed", unlogged_.overflowed},
       {"manifests_not_held", unlogged_.manifests_not_held},
       {"lost_pending", static_cast<uint64_t>(resync_.lost())},
       {"pending", static_cast<uint64_t>(coalescer_.pending())},
       {"max_pending", static_cast<uint64_t>(settings_.max_pending)}});
  unlogged_ = Unlogged{};
}

void Intake::FlushWarnings() {
  malformed_.Flush();
  malformed_ack_.Flush();
  wrong_cluster_.Flush();
  other_application_.Flush();
}

}  // namespace mmi::status_sink
