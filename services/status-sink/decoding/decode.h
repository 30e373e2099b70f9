// The decode the sink runs on each received status event: the one-pass decoder
// (one_pass_decoder.h) wherever it can vouch for its answer, the full path
// (DecodeStatusReportFull, status_report.h) everywhere else. The two decoders share only the types
// of status_report.h; this file alone picks between them, and between them and the bundle decode
// of manifest delivery (DecodeBundleReport).
// Thread-safe: one one-pass decoder per calling thread (in the sink: the loop thread).
#pragma once

#include <variant>

#include "libs/cloudevents/event.h"
#include "services/status-sink/decoding/status_report.h"

namespace mmi::status_sink {

// Decodes `event` (any event received on the status subscription). Always equal to
// DecodeStatusReportFull, the status as a tree or as its text with the material hash for
// `ignore_resource_health_messages` (StatusTree(), MaterialHashOf(), status_update.h).
std::variant<StatusReport, Rejection> DecodeStatusReport(
    const cloudevents::Event& event, bool ignore_resource_health_messages = false);

// What the sink takes from an event when manifest delivery is on: DecodeStatusReport's answer,
// but for its kNoFeedback rejection DecodeBundleReport's report when that decodes (a bundle of
// rendered manifests holds no Application). `manifest_delivery` (the resource is known to be
// delivered as rendered manifests) decodes the bundle first and alone, which is all such an
// event needs; the answer is the same either way, the other decodes running only where the bundle
// alone cannot vouch for it (a deletion, an Application's status feedback, a malformed event).
std::variant<StatusReport, Rejection> DecodeStatusOrBundleReport(
    const cloudevents::Event& event, bool ignore_resource_health_messages, bool manifest_delivery);

}  // namespace mmi::status_sink
