#include "services/status-sink/decoding/status_report.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"

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

// The value names of the Application manifest's JSONPaths feedback rule
// (services/dispatcher/apps/payload: BuildDispatch, kDispatchVersionFeedback).
constexpr std::string_view kStatusFeedback = "status";
constexpr std::string_view kDispatchVersionFeedback = "dispatchVersion";
// The annotation that feedback value reads (services/dispatcher/apps/payload.h), for errors.
constexpr std::string_view kDispatchVersionAnnotation =
    "apps.open-cluster-management.io/dispatch-version";
// How much of a refused `dispatchVersion` string an error shows.
constexpr std::size_t kShownValueBytes = 32;

const cloudevents::FeedbackValue* FindFeedback(const cloudevents::ManifestCondition& manifest,
                                               std::string_view name) {
  auto it = std::ranges::find(manifest.status_feedback, name, &cloudevents::FeedbackValue::name);
  return it == manifest.status_feedback.end() ? nullptr : &*it;
}

// The first Application manifest with a feedback value named `name`.
const cloudevents::ManifestCondition* ApplicationWith(
    const cloudevents::ManifestBundleStatus& status, std::string_view name) {
  for (const auto& manifest : status.resource_status) {
    const auto& meta = manifest.resource_meta;
    if (meta.kind == "Application" && (meta.group == "argoproj.io" || meta.group.empty()) &&
        FindFeedback(manifest, name) != nullptr) {
      return &manifest;
    }
  }
  return nullptr;
}

// The Application manifest whose feedback the sink reads: the first one with a "status" value.
const cloudevents::ManifestCondition* StatusManifest(
    const cloudevents::ManifestBundleStatus& status) {
  return ApplicationWith(status, kStatusFeedback);
}

// The Application manifest whose "dispatchVersion" the sink reads: StatusManifest's; without
// one, the first with a "dispatchVersion" value (an Application no Argo CD reported on yet).
const cloudevents::ManifestCondition* AckManifest(const cloudevents::ManifestBundleStatus& status) {
  const cloudevents::ManifestCondition* manifest = StatusManifest(status);
  return manifest != nullptr ? manifest : ApplicationWith(status, kDispatchVersionFeedback);
}

// The attributes and payload every status report has: resource id, sequence id, status hash,
// Deleted, the event facts and the metadata's hub Application; `payload` gets the decoded status.
std::variant<StatusReport, Rejection> DecodeEnvelope(const cloudevents::Event& event,
                                                     cloudevents::ManifestBundleStatus& payload) {
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
  auto decoded = cloudevents::ManifestBundleStatusOf(event);
  if (!decoded.ok()) {
    return Malformed(decoded.status());
  }
  payload = *std::move(decoded);
  auto hash = event.StatusHash();
  if (hash.ok() && !hash->empty()) {
    report.update.status_hash = *hash;
  } else {
    auto computed = cloudevents::StatusHash(payload);
    if (!computed.ok()) {
      return Malformed(computed.status());
    }
    report.update.status_hash = *computed;
  }
  report.update.deleted = cloudevents::IsDeleted(payload);
  TakeEventFacts(event, report);
  report.metadata_app = MetadataApp(event);
  return report;
}

}  // namespace

std::variant<StatusReport, Rejection> DecodeStatusReportFull(const cloudevents::Event& event) {
  cloudevents::ManifestBundleStatus payload;
  auto decoded = DecodeEnvelope(event, payload);
  auto* report = std::get_if<StatusReport>(&decoded);
  if (report == nullptr || report->update.deleted) {
    return decoded;
  }
  auto feedback = FeedbackStatus(payload);
  if (!feedback.ok()) {
    return Malformed(feedback.status());
  }
  if (!feedback->has_value()) {
    // An acknowledgement alone still counts (StatusUpdate::ack_only); a refused one does not.
    auto acked = FeedbackAckedVersion(payload);
    if (!acked.ok() || !acked->has_value()) {
      return Rejection{DropReason::kNoFeedback, "no status feedback yet"};
    }
    report->update.acked_version = *acked;
    report->update.ack_only = true;
    return decoded;
  }
  report->update.status = std::move(**feedback);
  // A bad acknowledgement costs only itself: the status is still good to write.
  auto acked = FeedbackAckedVersion(payload);
  if (acked.ok()) {
    report->update.acked_version = *acked;
  } else {
    report->acked_version_error = std::string(acked.status().message());
  }
  return decoded;
}

std::optional<int32_t> BundleAckedVersion(const cloudevents::Event& event,
                                          const cloudevents::ManifestBundleStatus& status) {
  if (!event.HasExtension(cloudevents::kExtMetadata)) {
    return std::nullopt;
  }
  auto meta = cloudevents::ObjectMetaOf(event);
  if (!meta.ok()) {
    return std::nullopt;
  }
  auto stamp = meta->annotations.find(std::string(kDispatchVersionAnnotation));
  if (stamp == meta->annotations.end()) {
    return std::nullopt;
  }
  // The agent's metadata is that of the work it holds; its Applied condition says whether that
  // generation is the one applied (the captured agent reports observedGeneration per condition).
  const auto applied = std::ranges::find(status.conditions, std::string_view("Applied"),
                                         &cloudevents::Condition::type);
  if (applied == status.conditions.end() || applied->status != "True" ||
      applied->observed_generation != meta->generation) {
    return std::nullopt;
  }
  return AckedVersionOf(stamp->second);
}

std::variant<StatusReport, Rejection> DecodeBundleReport(const cloudevents::Event& event) {
  auto payload = std::make_shared<cloudevents::ManifestBundleStatus>();
  auto decoded = DecodeEnvelope(event, *payload);
  auto* report = std::get_if<StatusReport>(&decoded);
  if (report == nullptr) {
    return decoded;
  }
  if (event.HasExtension(cloudevents::kExtResourceVersion)) {
    auto version = event.ResourceVersion();
    if (!version.ok()) {
      return Malformed(version.status());
    }
    report->bundle_generation = *version;
  }
  if (!report->update.deleted) {
    report->update.acked_version = BundleAckedVersion(event, *payload);
    if (!payload->manifest_bundle.has_value() && event.data.has_value()) {
      report->bundle_text = *event.data;
    }
  }
  report->bundle_status = std::move(payload);
  return decoded;
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

absl::StatusOr<std::optional<nlohmann::json>> FeedbackStatus(
    const cloudevents::ManifestBundleStatus& status) {
  const cloudevents::ManifestCondition* manifest = StatusManifest(status);
  if (manifest == nullptr) {
    return std::optional<nlohmann::json>();
  }
  const auto& meta = manifest->resource_meta;
  const auto& value = *FindFeedback(*manifest, kStatusFeedback);
  if (value.field_value.type != cloudevents::FieldValueType::kJsonRaw) {
    return absl::InvalidArgumentError(absl::StrCat(
        "statusFeedback value \"status\" of Application ", meta.namespace_, "/", meta.name, " is ",
        std::string(cloudevents::FieldValueTypeName(value.field_value.type)),
        ", expected JsonRaw (check the work's feedbackRules)"));
  }
  if (!value.field_value.json_raw_value.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("statusFeedback value \"status\" of Application ", meta.namespace_, "/",
                     meta.name, " is not a JSON object"));
  }
  return std::optional<nlohmann::json>(value.field_value.json_raw_value);
}

absl::StatusOr<std::optional<int32_t>> FeedbackAckedVersion(
    const cloudevents::ManifestBundleStatus& status) {
  const cloudevents::ManifestCondition* manifest = AckManifest(status);
  const cloudevents::FeedbackValue* value =
      manifest == nullptr ? nullptr : FindFeedback(*manifest, kDispatchVersionFeedback);
  if (value == nullptr) {
    return std::nullopt;
  }
  const auto& meta = manifest->resource_meta;
  const cloudevents::FieldValue& field = value->field_value;
  std::optional<int32_t> version;
  std::string shown;  // the refused value, as the error shows it
  if (field.type == cloudevents::FieldValueType::kString) {
    version = AckedVersionOf(field.string);
    // Cut and escaped: an agent's string may be long or hold any byte.
    shown = absl::StrCat("\"", absl::CHexEscape(field.string.substr(0, kShownValueBytes)),
                         field.string.size() > kShownValueBytes ? "...\"" : "\"");
  } else if (field.type == cloudevents::FieldValueType::kInteger) {
    version = AckedVersionOf(field.integer);
    shown = absl::StrCat(field.integer);
  } else {
    // Boolean or JsonRaw: not what the dispatcher's rule yields (a JSONPaths rule on an
    // annotation gives a String).
    return absl::InvalidArgumentError(absl::StrCat(
        "statusFeedback value \"dispatchVersion\" of Application ", meta.namespace_, "/", meta.name,
        " is ", std::string(cloudevents::FieldValueTypeName(field.type)),
        ", expected String or Integer (check the work's feedbackRules)"));
  }
  if (!version.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "statusFeedback value \"dispatchVersion\" of Application ", meta.namespace_, "/", meta.name,
        " is ", std::string(cloudevents::FieldValueTypeName(field.type)), " ", shown,
        ", expected a dispatch version from 0 to 2147483647 (check the spoke Application's "
        "annotation ",
        std::string(kDispatchVersionAnnotation), ")"));
  }
  return version;
}

std::optional<int32_t> AckedVersionOf(std::string_view text) {
  // Digits only (from_chars would take a leading minus), all of them, within int32_t.
  int32_t value = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || !absl::ascii_isdigit(static_cast<unsigned char>(text.front()))) {
    return std::nullopt;
  }
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end) {
    return std::nullopt;
  }
  return value;
}

std::optional<int32_t> AckedVersionOf(int64_t value) {
  if (value < 0 || value > std::numeric_limits<int32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<int32_t>(value);
}

}  // namespace mmi::status_sink
