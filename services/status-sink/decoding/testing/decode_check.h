// Test-only, shared by status_report_equivalence_test.cc and fuzz/status_report_fuzzer.cc:
// whether two decodes of one status event are the same answer, and the event a fuzz input
// stands for.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "libs/cloudevents/event.h"
#include "libs/cloudevents/fuzz/fuzz_util.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "services/status-sink/decoding/status_report.h"

namespace mmi::status_sink::testing {

// "" when `a` and `b` are the same answer (every StatusReport field, the feedback tree compared
// as values and as text, a bundle status by its presence; or the same Rejection reason and
// detail), else what differs.
inline std::string ReportDifference(const std::variant<StatusReport, Rejection>& a,
                                    const std::variant<StatusReport, Rejection>& b) {
  if (a.index() != b.index()) {
    return "one is a StatusReport, the other a Rejection";
  }
  if (const auto* ra = std::get_if<Rejection>(&a)) {
    const auto& rb = std::get<Rejection>(b);
    if (ra->reason != rb.reason) {
      return "rejection reasons differ";
    }
    return ra->detail == rb.detail ? ""
                                   : "rejection details differ: " + ra->detail + " | " + rb.detail;
  }
  const auto& x = std::get<StatusReport>(a);
  const auto& y = std::get<StatusReport>(b);
  const auto &u = x.update, &v = y.update;
  if (x.event_id != y.event_id || x.cluster != y.cluster || x.metadata_app != y.metadata_app) {
    return "event id, cluster or metadata application differ";
  }
  if (u.resource_id != v.resource_id || u.sequence_id != v.sequence_id ||
      u.status_hash != v.status_hash || u.deleted != v.deleted || u.event_time != v.event_time) {
    return "resource id, sequence id, status hash, deletion or event time differ";
  }
  if (u.acked_version != v.acked_version || u.ack_only != v.ack_only) {
    return "acknowledged dispatch versions differ, or one is an acknowledgement alone";
  }
  if ((x.bundle_status == nullptr) != (y.bundle_status == nullptr) ||
      x.bundle_generation != y.bundle_generation || x.bundle_text != y.bundle_text) {
    return "one is a bundle report, the other not, or their bundle generations or texts differ";
  }
  if (x.acked_version_error != y.acked_version_error) {
    return "dispatch version errors differ: " + x.acked_version_error + " | " +
           y.acked_version_error;
  }
  // The status as a tree (built from the text a decoder kept), and the material hash a decoder
  // computed against the other's tree.
  StatusUpdate tu = u;
  StatusUpdate tv = v;
  const auto& su = StatusTree(tu);
  const auto& sv = StatusTree(tv);
  if (su != sv || su.dump() != sv.dump()) {
    return "status feedback differs: " + su.dump() + " | " + sv.dump();
  }
  for (const auto* update : {&u, &v}) {
    if (!update->material_hash.empty() &&
        update->material_hash != MaterialHash(su, update->material_hash_ignores_health_messages)) {
      return "the decoder's material hash differs from MaterialHash() of the status: " + su.dump();
    }
  }
  return "";
}

// The `metadata` extension of the fuzz envelope: what a real agent sends.
inline constexpr std::string_view kFuzzMetadata =
    R"({"name":"w","namespace":"cluster1","uid":"u","generation":1,)"
    R"("creationTimestamp":"2026-11-26T13:37:20Z","labels":{"a":"b"},"annotations":{)"
    R"("apps.open-cluster-management.io/hub-application-name":"app",)"
    R"("apps.open-cluster-management.io/hub-application-namespace":"argocd"},)"
    R"("finalizers":["f"]})";

// A status update with a fixed, valid envelope.
inline cloudevents::Event FuzzEnvelope(std::string data, std::string metadata) {
  cloudevents::Event event;
  event.id = "fuzz";
  event.source = "cluster1-work-agent";
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.data_content_type = "application/json";
  event.SetString(cloudevents::kExtClusterName, "cluster1");
  event.SetString(cloudevents::kExtResourceId, "C954CD72-740E-5EE1-A957-6C53967B138D");
  event.SetString(cloudevents::kExtSequenceId, "2125947013609558016");
  event.SetString(cloudevents::kExtStatusHash, "0f81");
  event.SetString(cloudevents::kExtMetadata, std::move(metadata));
  event.data = std::move(data);
  return event;
}

// The event a fuzz input stands for:
//   `{...` or `[...`: the `data` of a status update with a fixed envelope;
//   `meta:<text>`: that envelope and valid data, with `metadata` = text;
//   anything else: an MQTT message in the framing of libs/cloudevents/fuzz/fuzz_util.h.
// nullopt when the framed message does not decode.
inline std::optional<cloudevents::Event> FuzzEvent(std::string_view input) {
  if (input.starts_with("{") || input.starts_with("[")) {
    return FuzzEnvelope(std::string(input), std::string(kFuzzMetadata));
  }
  if (input.starts_with("meta:")) {
    return FuzzEnvelope(
        R"({"resourceStatus":[{"resourceMeta":{"kind":"Application"},"statusFeedback":)"
        R"({"values":[{"name":"status","fieldValue":{"type":"JsonRaw","jsonRaw":"{}"}}]}}]})",
        std::string(input.substr(5)));
  }
  const auto framed = cloudevents::fuzz::ParseFramed(input);
  cloudevents::MqttMessage message;
  message.content_type = framed.content_type;
  message.user_properties = framed.properties;
  message.payload = framed.payload;
  auto event = cloudevents::DecodeMqtt(message);
  if (!event.ok()) {
    return std::nullopt;
  }
  return *std::move(event);
}

}  // namespace mmi::status_sink::testing
