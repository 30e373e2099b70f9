#include "services/status-sink/status_report.h"

#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/transport/metrics.h"
#include "services/status-sink/one_pass_decoder.h"
#include "services/status-sink/status_patch.h"

namespace mmi::status_sink {
namespace {

// ManifestWork annotations the dispatcher sets (hub-apis.md §5.1).
constexpr std::string_view kHubAppNamespaceAnnotation =
    "apps.open-cluster-management.io/hub-application-namespace";
constexpr std::string_view kHubAppNameAnnotation =
    "apps.open-cluster-management.io/hub-application-name";

Rejection Malformed(const absl::Status& status) {
  return Rejection{DropReason::kMalformed, std::string(status.message())};
}

// "<namespace>/<name>" from the `metadata` extension's annotations; empty when absent.
std::string MetadataApp(const cloudevents::Event& event) {
  if (!event.HasExtension(cloudevents::kExtMetadata)) {
    return "";
  }
  auto meta = cloudevents::ObjectMetaOf(event);
  if (!meta.ok()) {
    return "";
  }
  auto ns = meta->annotations.find(std::string(kHubAppNamespaceAnnotation));
  auto name = meta->annotations.find(std::string(kHubAppNameAnnotation));
  if (ns == meta->annotations.end() || name == meta->annotations.end()) {
    return "";
  }
  return ns->second + "/" + name->second;
}

}  // namespace

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

std::variant<StatusReport, Rejection> DecodeStatusReportFull(const cloudevents::Event& event) {
  if (cloudevents::ClassifyReceived(event) != cloudevents::ReceivedKind::kStatus) {
    return Rejection{DropReason::kNotStatus, event.type};
  }
  StatusReport report;
  report.event_id = event.id;
  auto id = event.ResourceId();
  if (!id.ok()) {
    return Malformed(id.status());
  }
  report.update.resource_id = absl::AsciiStrToLower(*id);
  if (event.HasExtension(cloudevents::kExtSequenceId)) {
    auto text = event.SequenceId();
    absl::StatusOr<cloudevents::SequenceId> seq =
        text.ok() ? cloudevents::SequenceId::Parse(*text) : text.status();
    if (!seq.ok()) {
      return Malformed(seq.status());
    }
    report.update.sequence_id = seq->Value();
  }
  auto payload = cloudevents::ManifestBundleStatusOf(event);
  if (!payload.ok()) {
    return Malformed(payload.status());
  }
  auto hash = event.StatusHash();
  if (hash.ok() && !hash->empty()) {
    report.update.status_hash = *hash;
  } else {
    auto computed = cloudevents::StatusHash(*payload);
    if (!computed.ok()) {
      return Malformed(computed.status());
    }
    report.update.status_hash = *computed;
  }
  report.update.deleted = cloudevents::IsDeleted(*payload);
  if (!report.update.deleted) {
    auto feedback = FeedbackStatus(*payload);
    if (!feedback.ok()) {
      return Malformed(feedback.status());
    }
    if (!feedback->has_value()) {
      return Rejection{DropReason::kNoFeedback, "no status feedback yet"};
    }
    report.update.status = std::move(**feedback);
  }
  TakeEventFacts(event, report);
  report.metadata_app = MetadataApp(event);
  return report;
}

void TakeEventFacts(const cloudevents::Event& event, StatusReport& report) {
  if (event.time) {
    report.update.event_time = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            event.time->time_since_epoch()));
  }
  auto cluster = event.ClusterName();
  if (cluster.ok()) {
    report.cluster = *std::move(cluster);
  }
}

}  // namespace mmi::status_sink
