// One received status event decoded into what the sink needs (pure, no I/O): the resource id,
// the reporting cluster, the sequence id and status hash, the Application's `status` feedback
// value (and its `dispatchVersion`) or the deletion, and the hub Application the ManifestWork's
// metadata names.
//
// A status event that is not one, cannot be decoded or carries no status feedback yet (and no
// acknowledgement either: StatusUpdate::ack_only) comes back as a `Rejection` naming the DropReason
// the sink counts it under and a detail for the log. This file holds the types and the full decode
// path; DecodeStatusReport (decode.h) picks between it and the one-pass decoder
// (one_pass_decoder.h), which both include this header.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "nlohmann/json.hpp"
#include "services/status-sink/decoding/status_update.h"
#include "services/status-sink/metrics/outcomes.h"

namespace mmi::status_sink {

// A decoded status report.
struct StatusReport {
  // resource id (lower case), sequence id, status hash (the event's `statushash`, or computed
  // from the payload when absent or empty), Deleted, the `status` feedback (null when deleted),
  // the agent's `time`.
  StatusUpdate update;
  std::string event_id;
  std::string cluster;  // the `clustername` extension; empty when absent
  // "<namespace>/<name>" of the hub Application named by the event's `metadata` extension
  // (ManifestWork annotations, hub-apis.md §5.1); empty when absent or unreadable. Only
  // cross-checked: the dispatcher's table stays authoritative.
  std::string metadata_app;
  // Manifest delivery (DecodeBundleReport only): the agent's ManifestBundle status, from which
  // the sink builds the status itself, and the event's `resourceversion` (the bundle generation
  // it reports); null and 0 otherwise.
  std::shared_ptr<const cloudevents::ManifestBundleStatus> bundle_status;
  std::int64_t bundle_generation = 0;
  // DecodeBundleReport, not deleted: the event's `data` (that status's JSON as the agent sent
  // it) when it carries no spec echo, which ManifestStatuses holds as it is; else empty.
  std::string bundle_text;
  // Why the Application's `dispatchVersion` feedback value is not a dispatch version (its type
  // or its value; FeedbackAckedVersion); empty when it is one or there is none. The report is
  // used all the same: only its acknowledgement (`update.acked_version`) is left out.
  std::string acked_version_error;
};

// Why an event is not a usable status report.
struct Rejection {
  DropReason reason;  // kNotStatus, kMalformed or kNoFeedback
  std::string detail;
};

// For an event DecodeStatusReport rejected as kNoFeedback, which is how a bundle of rendered
// manifests reports (it holds no Application): the same report with `bundle_status` and
// `bundle_generation` set instead of `update.status`. The sink keeps it only for a resource in
// manifest delivery; any other rejection is returned as DecodeStatusReportFull returns it.
// Its `update.acked_version` is BundleAckedVersion's.
std::variant<StatusReport, Rejection> DecodeBundleReport(const cloudevents::Event& event);

// The dispatch version a bundle of rendered manifests acknowledges (the end-to-end
// acknowledgement of manifest delivery, ADR 0007): the dispatcher stamps its version into the
// work's `apps.open-cluster-management.io/dispatch-version` annotation (the bundle holds no
// Application to carry it), the agent echoes the work's metadata in every status event, and its
// `Applied` condition, True with the observedGeneration of that metadata's generation, says the
// stamped work is the one applied. nullopt otherwise (no stamp, not applied yet, an older
// generation applied, or a stamp AckedVersionOf refuses).
std::optional<int32_t> BundleAckedVersion(const cloudevents::Event& event,
                                          const cloudevents::ManifestBundleStatus& status);

// What every decode path takes from the event's attributes alone: its time and its cluster.
void TakeEventFacts(const cloudevents::Event& event, StatusReport& report);

// The full path: the typed ManifestBundleStatus and ObjectMeta decoders of libs/cloudevents.
// The reference DecodeStatusReport (decode.h) is tested against; the only path for malformed
// events.
std::variant<StatusReport, Rejection> DecodeStatusReportFull(const cloudevents::Event& event);

// The feedback value named "status" of the Application manifest in `status` (the first
// Application manifest that has one). nullopt when the
// agent has not reported one yet; kInvalidArgument when it is not JsonRaw holding an object.
absl::StatusOr<std::optional<nlohmann::json>> FeedbackStatus(
    const cloudevents::ManifestBundleStatus& status);

// The first feedback value named "dispatchVersion" of the manifest FeedbackStatus reads (without
// one: of the first Application manifest that has such a value), as AckedVersionOf reads it;
// nullopt when there is none. kInvalidArgument, naming the value, when
// it is of another type than String or Integer or AckedVersionOf refuses it.
absl::StatusOr<std::optional<int32_t>> FeedbackAckedVersion(
    const cloudevents::ManifestBundleStatus& status);

// A `dispatchVersion` feedback value (the dispatcher's `dispatched_resources.version`, an
// integer from 0): the value of a String of decimal digits or of an Integer, when in
// [0, INT32_MAX]; else nullopt.
std::optional<int32_t> AckedVersionOf(std::string_view text);
std::optional<int32_t> AckedVersionOf(int64_t value);

}  // namespace mmi::status_sink
