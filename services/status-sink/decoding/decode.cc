#include "services/status-sink/decoding/decode.h"

#include <utility>
#include <variant>

#include "services/status-sink/decoding/one_pass_decoder.h"

namespace mmi::status_sink {

std::variant<StatusReport, Rejection> DecodeStatusReport(const cloudevents::Event& event,
                                                         bool ignore_resource_health_messages) {
  // One decoder per thread (in the sink: the loop thread) keeps its parse buffers warm.
  thread_local OnePassDecoder decoder;
  auto decoded = decoder.Decode(event, ignore_resource_health_messages);
  if (decoded.has_value()) {
    return *std::move(decoded);
  }
  return DecodeStatusReportFull(event);
}

namespace {

// Whether `bundle` (DecodeBundleReport's report of an event) is the answer the slow path
// (DecodeStatusReport, then DecodeBundleReport for its kNoFeedback) gives: the envelope decoded
// alike, so exactly when the full path finds no deletion, no Application status feedback and
// no acknowledgement alone (StatusUpdate::ack_only).
bool BundleAloneAnswers(const StatusReport& bundle) {
  if (bundle.update.deleted || bundle.bundle_status == nullptr) {
    return false;
  }
  auto feedback = FeedbackStatus(*bundle.bundle_status);
  if (!feedback.ok() || feedback->has_value()) {
    return false;
  }
  auto acked = FeedbackAckedVersion(*bundle.bundle_status);
  return !acked.ok() || !acked->has_value();
}

}  // namespace

std::variant<StatusReport, Rejection> DecodeStatusOrBundleReport(
    const cloudevents::Event& event, bool ignore_resource_health_messages, bool manifest_delivery) {
  if (manifest_delivery) {
    // One typed decode instead of the one-pass decoder's full read, which would end in
    // kNoFeedback, and the bundle decode after it.
    auto bundle = DecodeBundleReport(event);
    if (const auto* report = std::get_if<StatusReport>(&bundle);
        report != nullptr && BundleAloneAnswers(*report)) {
      return bundle;
    }
  }
  auto decoded = DecodeStatusReport(event, ignore_resource_health_messages);
  if (const auto* rejection = std::get_if<Rejection>(&decoded);
      rejection != nullptr && rejection->reason == DropReason::kNoFeedback) {
    auto bundle = DecodeBundleReport(event);
    if (std::holds_alternative<StatusReport>(bundle)) {
      return bundle;
    }
  }
  return decoded;
}

}  // namespace mmi::status_sink
