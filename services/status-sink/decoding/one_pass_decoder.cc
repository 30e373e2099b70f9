#include "services/status-sink/decoding/one_pass_decoder.h"

#include <simdjson.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/types/span.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/json_format.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"
#include "services/status-sink/decoding/internal/json_tree.h"
#include "services/status-sink/decoding/status_report.h"

namespace mmi::status_sink {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using Member = std::optional<element>;  // nullopt: absent or null (the full path's "absent")

constexpr std::size_t kInitialCapacity = 64 * 1024;

// ManifestWork annotations the dispatcher sets (hub-apis.md §5.1).
constexpr std::string_view kHubAppNamespaceAnnotation =
    "apps.open-cluster-management.io/hub-application-namespace";
constexpr std::string_view kHubAppNameAnnotation =
    "apps.open-cluster-management.io/hub-application-name";

// The members `names` of `object`: for a repeated key the last one counts, as in the tree
// nlohmann builds for the full path.
template <std::size_t N>
std::array<Member, N> Members(const element& object, const std::array<std::string_view, N>& names) {
  std::array<Member, N> out;
  // The handle is copied out first: a range-for over value_unsafe() of the temporary result
  // would iterate a destroyed object.
  const simdjson::dom::object fields = object.get_object().value_unsafe();
  for (const auto field : fields) {
    for (std::size_t i = 0; i < N; ++i) {
      if (field.key == names[i]) {
        out[i] = field.value.is_null() ? Member() : Member(field.value);
        break;
      }
    }
  }
  return out;
}

// The typed reads of ObjectReader (libs/cloudevents/internal/json.h): false where it would
// return an error.
bool String(const Member& member, std::string_view* out) {
  *out = {};
  if (!member.has_value()) {
    return true;
  }
  if (!member->is_string()) {
    return false;
  }
  *out = member->get_string().value_unsafe();
  return true;
}

bool Int64(const Member& member, std::int64_t* out) {
  if (!member.has_value()) {
    *out = 0;
    return true;
  }
  // UINT64 (beyond int64) and DOUBLE are errors there too; INT64 covers every other integer.
  if (member->type() != element_type::INT64) {
    return false;
  }
  *out = member->get_int64().value_unsafe();
  return true;
}

bool Time(const Member& member) {
  std::string_view text;
  return String(member, &text) && (text.empty() || cloudevents::ParseTimestamp(text).ok());
}

bool IsObject(const Member& member) { return member.has_value() && member->is_object(); }

// Calls `each(element)` for each element of an array member (absent = none); false when the
// member is not an array or `each` is false.
template <typename Fn>
bool ForEach(const Member& member, Fn each) {
  if (!member.has_value()) {
    return true;
  }
  if (!member->is_array()) {
    return false;
  }
  const simdjson::dom::array items = member->get_array().value_unsafe();
  for (const element item : items) {
    if (!each(item)) {
      return false;
    }
  }
  return true;
}

// ConditionFromJson's checks; `deleted` tracks FindCondition(kConditionDeleted) (first wins).
bool Conditions(const Member& member, std::optional<bool>* deleted) {
  return ForEach(member, [&](const element& item) {
    if (!item.is_object()) {
      return false;
    }
    const auto m = Members<6>(
        item, {"type", "status", "observedGeneration", "lastTransitionTime", "reason", "message"});
    std::string_view type;
    std::string_view status;
    std::string_view text;
    std::int64_t generation = 0;
    if (!String(m[0], &type) || !String(m[1], &status) || !Int64(m[2], &generation) ||
        !Time(m[3]) || !String(m[4], &text) || !String(m[5], &text)) {
      return false;
    }
    if (deleted != nullptr && !deleted->has_value() && type == cloudevents::kConditionDeleted) {
      *deleted = status == cloudevents::kConditionTrue;
    }
    return true;
  });
}

bool ResourceMeta(const Member& member, std::string_view* group, std::string_view* kind) {
  if (!member.has_value()) {
    return true;
  }
  if (!member->is_object()) {
    return false;
  }
  const auto m =
      Members<7>(*member, {"ordinal", "group", "version", "kind", "resource", "name", "namespace"});
  std::int64_t ordinal = 0;
  std::string_view text;
  return Int64(m[0], &ordinal) && ordinal >= std::numeric_limits<std::int32_t>::min() &&
         ordinal <= std::numeric_limits<std::int32_t>::max() && String(m[1], group) &&
         String(m[2], &text) && String(m[3], kind) && String(m[4], &text) && String(m[5], &text) &&
         String(m[6], &text);
}

// A "dispatchVersion" feedback value as FeedbackAckedVersion reads it.
struct VersionRead {
  std::optional<int32_t> value;
  bool refused = false;  // of another type, or AckedVersionOf refused it
};

// What FeedbackStatus (status_report.h) picks: the first "status" value of the first
// Application manifest that has one, as JSON text, with its material hash; and what
// FeedbackAckedVersion picks: that manifest's first "dispatchVersion" value.
struct Feedback {
  bool found = false;
  bool json_raw = false;
  bool object = false;
  std::string text;
  std::string material_hash;
  std::optional<int32_t> acked_version;
  // That value is there but FeedbackAckedVersion refuses it (the full path words why).
  bool acked_version_refused = false;
  // Without a "status" value: the first Application manifest's "dispatchVersion" value, which
  // FeedbackAckedVersion reads then (an acknowledgement alone, StatusUpdate::ack_only).
  bool lone_version_seen = false;
  VersionRead lone_version;
};

// What AckedVersionOf made of a String or Integer value, into `version` when given.
void Take(VersionRead* version, std::optional<int32_t> value) {
  if (version != nullptr) {
    version->value = value;
    version->refused = !value.has_value();
  }
}

struct PayloadReader {
  internal::JsonTreeParser& raw_parser;
  const cloudevents::CodecLimits& limits;
  const bool ignore_resource_health_messages;
  std::string& scratch;
  std::optional<bool> deleted;
  Feedback feedback;

  // FieldValueFromJson's checks; a JsonRaw value is parsed (the full path does that for
  // every one). The `wanted` one (the Application's status) is kept in `feedback`; when
  // `version` is given, the value is read into it as FeedbackAckedVersion reads it.
  bool FieldValue(const Member& member, bool wanted, VersionRead* version) {
    if (!IsObject(member)) {
      return false;  // required
    }
    const auto m = Members<5>(*member, {"type", "integer", "string", "boolean", "jsonRaw"});
    std::string_view type;
    if (!String(m[0], &type)) {
      return false;
    }
    const bool json_raw = type == "JsonRaw";
    if (version != nullptr) {
      version->refused = type != "Integer" && type != "String";  // read below when one of them
    }
    if (wanted) {
      feedback.found = true;
      feedback.json_raw = json_raw;
    }
    std::int64_t integer = 0;
    std::string_view text;
    if (type == "Integer") {
      if (!m[1].has_value() || !Int64(m[1], &integer)) {
        return false;
      }
      Take(version, AckedVersionOf(integer));
      return true;
    }
    if (type == "String") {
      if (!m[2].has_value() || !String(m[2], &text)) {
        return false;
      }
      Take(version, AckedVersionOf(text));
      return true;
    }
    if (type == "Boolean") {
      return m[3].has_value() && m[3]->is_bool();
    }
    if (!json_raw || !m[4].has_value() || !String(m[4], &text)) {
      return false;
    }
    element root;
    if (!raw_parser.Index(text, root)) {
      return false;
    }
    if (wanted && root.is_object()) {
      feedback.object = true;
      feedback.text.assign(text);
      return MaterialHashOfIndex(root, limits.max_json_depth, ignore_resource_health_messages,
                                 scratch, feedback.material_hash);
    }
    scratch.clear();  // checked as BuildTree would build it
    return internal::AppendDump(root, limits.max_json_depth, scratch);
  }

  bool StatusFeedback(const Member& member, bool application) {
    if (!member.has_value()) {
      return true;
    }
    if (!member->is_object()) {
      return false;
    }
    const auto m = Members<1>(*member, {"values"});
    // The values may come in any order: this manifest's version counts once its status is the
    // one picked.
    bool status_here = false;
    bool version_seen = false;
    VersionRead version;
    const bool ok = ForEach(m[0], [&](const element& item) {
      if (!item.is_object()) {
        return false;
      }
      const auto v = Members<2>(item, {"name", "fieldValue"});
      std::string_view name;
      if (!String(v[0], &name)) {
        return false;
      }
      const bool wanted = application && name == "status" && !feedback.found;
      status_here = status_here || wanted;
      const bool version_wanted = application && name == "dispatchVersion" && !version_seen;
      version_seen = version_seen || version_wanted;
      return FieldValue(v[1], wanted, version_wanted ? &version : nullptr);
    });
    if (status_here) {
      feedback.acked_version = version.value;
      feedback.acked_version_refused = version.refused;
    } else if (version_seen && !feedback.lone_version_seen) {
      feedback.lone_version_seen = true;
      feedback.lone_version = version;
    }
    return ok;
  }

  bool ResourceStatus(const Member& member) {
    return ForEach(member, [&](const element& item) {
      if (!item.is_object()) {
        return false;
      }
      const auto m = Members<3>(item, {"resourceMeta", "statusFeedback", "conditions"});
      std::string_view group;
      std::string_view kind;
      if (!ResourceMeta(m[0], &group, &kind)) {
        return false;
      }
      const bool application = kind == "Application" && (group == "argoproj.io" || group.empty());
      return StatusFeedback(m[1], application) && Conditions(m[2], nullptr);
    });
  }

  // ManifestBundleFromJson on the echo, through nlohmann (it is not on the agent's path).
  bool Echo(const Member& member) const {
    if (!member.has_value()) {
      return true;
    }
    const std::string text = simdjson::to_string(*member);
    auto tree = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    return !tree.is_discarded() &&
           cloudevents::ManifestBundleFromJson(tree, "data.manifestBundle", limits).ok();
  }

  bool Read(const element& root) {
    if (!root.is_object()) {
      return false;
    }
    const auto m = Members<3>(root, {"manifestBundle", "conditions", "resourceStatus"});
    return Echo(m[0]) && Conditions(m[1], &deleted) && ResourceStatus(m[2]);
  }
};

// The envelope reads of DecodeStatusReportFull; false where it would reject, or would compute
// the status hash from the typed payload.
bool ReadEnvelope(const cloudevents::Event& event, StatusReport& report) {
  report.event_id = event.id;
  auto id = event.ResourceId();
  if (!id.ok()) {
    return false;
  }
  report.update.resource_id = absl::AsciiStrToLower(*id);
  if (event.HasExtension(cloudevents::kExtSequenceId)) {
    auto text = event.SequenceId();
    auto seq = text.ok() ? cloudevents::SequenceId::Parse(*text)
                         : absl::StatusOr<cloudevents::SequenceId>(text.status());
    if (!seq.ok()) {
      return false;
    }
    report.update.sequence_id = seq->Value();
  }
  auto hash = event.StatusHash();
  if (!hash.ok() || hash->empty()) {
    return false;
  }
  report.update.status_hash = *std::move(hash);
  TakeEventFacts(event, report);
  return true;
}

using Annotation = std::optional<std::string_view>;

// ObjectMetaFromJson's checks of a StringMap member; the two hub annotations are kept.
bool StringMap(const Member& member, Annotation* ns, Annotation* name) {
  if (!member.has_value()) {
    return true;
  }
  if (!member->is_object()) {
    return false;
  }
  const simdjson::dom::object fields = member->get_object().value_unsafe();
  for (const auto field : fields) {
    if (!field.value.is_string()) {
      return false;
    }
    if (ns != nullptr && field.key == kHubAppNamespaceAnnotation) {
      *ns = field.value.get_string().value_unsafe();
    } else if (name != nullptr && field.key == kHubAppNameAnnotation) {
      *name = field.value.get_string().value_unsafe();
    }
  }
  return true;
}

bool StringList(const Member& member) {
  return ForEach(member, [](const element& item) { return item.is_string(); });
}

bool ObjectList(const Member& member) {
  return ForEach(member, [](const element& item) { return item.is_object(); });
}

bool AnyList(const Member& member) {
  return ForEach(member, [](const element&) { return true; });
}

}  // namespace

bool MaterialHashOfIndex(const simdjson::dom::element& status, int max_depth,
                         bool ignore_resource_health_messages, std::string& scratch,
                         std::string& hash) {
  using Step = internal::DumpPathStep;
  const auto skip = [ignore_resource_health_messages](absl::Span<const Step> path,
                                                      std::string_view key) {
    if (path.empty()) {
      return IsVolatileMember(key);
    }
    // resources[].health.message
    return ignore_resource_health_messages && key == "message" && path.size() == 3 &&
           path[0] == Step{.key = "resources"} && path[1] == Step{.key = {}, .array_items = true} &&
           path[2] == Step{.key = "health"};
  };
  scratch.clear();
  if (!internal::AppendDump(status, max_depth, skip, scratch)) {
    return false;
  }
  hash = cloudevents::Sha256Hex(scratch);
  return true;
}

struct OnePassDecoder::Parsers {
  simdjson::dom::parser data;
  simdjson::dom::parser metadata;
  internal::JsonTreeParser raw;
  std::string scratch;                      // the material text of a status, kept between events
  const cloudevents::CodecLimits limits{};  // the full path's (defaults)
};

OnePassDecoder::OnePassDecoder() : parsers_(std::make_unique<Parsers>()) {
  // One level below the limit: simdjson may count depth differently from
  // CodecLimits::max_json_depth, and must never accept what the full path refuses.
  const auto depth = static_cast<std::size_t>(parsers_->limits.max_json_depth - 1);
  // A failed allocation here is retried by the first parse, which then reports it.
  const auto data = parsers_->data.allocate(kInitialCapacity, depth);
  const auto metadata = parsers_->metadata.allocate(kInitialCapacity, depth);
  static_cast<void>(data);
  static_cast<void>(metadata);
}

OnePassDecoder::~OnePassDecoder() = default;

std::optional<std::string> OnePassDecoder::MetadataApp(const cloudevents::Event& event) {
  if (!event.HasExtension(cloudevents::kExtMetadata)) {
    return "";
  }
  auto text = event.MetadataJson();
  if (!text.ok()) {
    return "";
  }
  element root;
  if (text->size() > parsers_->limits.max_event_bytes || !internal::IsPlainJsonText(*text) ||
      parsers_->metadata.parse(*text).get(root) != simdjson::SUCCESS || !root.is_object()) {
    return std::nullopt;
  }
  const auto m = Members<15>(
      root, {"name", "generateName", "namespace", "uid", "resourceVersion", "selfLink",
             "generation", "deletionGracePeriodSeconds", "creationTimestamp", "deletionTimestamp",
             "labels", "annotations", "finalizers", "ownerReferences", "managedFields"});
  std::string_view s;
  std::int64_t i = 0;
  Annotation ns;
  Annotation name;
  const bool ok = String(m[0], &s) && String(m[1], &s) && String(m[2], &s) && String(m[3], &s) &&
                  String(m[4], &s) && String(m[5], &s) && Int64(m[6], &i) && Int64(m[7], &i) &&
                  Time(m[8]) && Time(m[9]) && StringMap(m[10], nullptr, nullptr) &&
                  StringMap(m[11], &ns, &name) && StringList(m[12]) && ObjectList(m[13]) &&
                  AnyList(m[14]);
  if (!ok) {
    return std::nullopt;
  }
  if (!ns.has_value() || !name.has_value()) {
    return "";
  }
  return std::string(*ns) + "/" + std::string(*name);
}

std::optional<std::variant<StatusReport, Rejection>> OnePassDecoder::Decode(
    const cloudevents::Event& event, bool ignore_resource_health_messages) {
  if (cloudevents::ClassifyReceived(event) != cloudevents::ReceivedKind::kStatus) {
    return std::nullopt;
  }
  StatusReport report;
  if (!ReadEnvelope(event, report) || !event.data.has_value() ||
      (event.data_content_type.has_value() &&
       !cloudevents::IsJsonContentType(*event.data_content_type))) {
    return std::nullopt;
  }
  const std::string& data = *event.data;
  element root;
  if (data.size() > parsers_->limits.max_event_bytes || !internal::IsPlainJsonText(data) ||
      parsers_->data.parse(data).get(root) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  PayloadReader payload{parsers_->raw,     parsers_->limits, ignore_resource_health_messages,
                        parsers_->scratch, std::nullopt,     {}};
  if (!payload.Read(root)) {
    return std::nullopt;
  }
  report.update.deleted = payload.deleted.value_or(false);
  if (!report.update.deleted) {
    const Feedback& feedback = payload.feedback;
    if (!feedback.found) {
      const VersionRead& lone = feedback.lone_version;
      if (!feedback.lone_version_seen || lone.refused || !lone.value.has_value()) {
        return Rejection{DropReason::kNoFeedback, "no status feedback yet"};
      }
      report.update.acked_version = lone.value;
      report.update.ack_only = true;
    } else {
      if (!feedback.json_raw || !feedback.object) {
        return std::nullopt;  // malformed: the full path words the rejection
      }
      if (feedback.acked_version_refused) {
        return std::nullopt;  // the full path words why (StatusReport::acked_version_error)
      }
      report.update.status_text = std::move(payload.feedback.text);
      report.update.material_hash = std::move(payload.feedback.material_hash);
      report.update.material_hash_ignores_health_messages = ignore_resource_health_messages;
      report.update.acked_version = feedback.acked_version;
    }
  }
  auto app = MetadataApp(event);
  if (!app.has_value()) {
    return std::nullopt;
  }
  report.metadata_app = *std::move(app);
  return report;
}

}  // namespace mmi::status_sink
