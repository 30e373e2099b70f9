#include "libs/cloudevents/object_meta.h"

#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/json.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"

namespace mmi::cloudevents {
namespace {

using internal::Json;
using internal::ObjectReader;

constexpr std::string_view kKnownMembers[] = {
    "name",       "generateName",      "namespace",         "uid",    "resourceVersion",
    "generation", "creationTimestamp", "deletionTimestamp", "labels", "annotations",
    "finalizers", "ownerReferences"};

bool IsKnownMember(std::string_view member) {
  for (const auto known : kKnownMembers) {
    if (member == known) {
      return true;
    }
  }
  return false;
}

absl::Status ReadTime(const ObjectReader& reader, std::string_view member,
                      std::optional<Timestamp>* out) {
  std::optional<std::string> text;
  RETURN_IF_ERROR(reader.OptionalString(member, &text));
  if (!text.has_value() || text->empty()) {
    out->reset();
    return absl::OkStatus();
  }
  auto time = ParseTimestamp(*text);
  if (!time.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader.PathOf(member), ": ", std::string(time.status().message())));
  }
  *out = *time;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ObjectMeta> ObjectMetaFromJson(const nlohmann::json& value) {
  ASSIGN_OR_RETURN(const auto reader, ObjectReader::Make(value, "metadata"));
  ObjectMeta meta;
  RETURN_IF_ERROR(reader.String("name", &meta.name));
  RETURN_IF_ERROR(reader.String("generateName", &meta.generate_name));
  RETURN_IF_ERROR(reader.String("namespace", &meta.namespace_));
  RETURN_IF_ERROR(reader.String("uid", &meta.uid));
  RETURN_IF_ERROR(reader.String("resourceVersion", &meta.resource_version));
  RETURN_IF_ERROR(reader.Int64("generation", &meta.generation));
  RETURN_IF_ERROR(ReadTime(reader, "creationTimestamp", &meta.creation_timestamp));
  RETURN_IF_ERROR(ReadTime(reader, "deletionTimestamp", &meta.deletion_timestamp));
  RETURN_IF_ERROR(reader.StringMap("labels", &meta.labels));
  RETURN_IF_ERROR(reader.StringMap("annotations", &meta.annotations));
  RETURN_IF_ERROR(reader.StringList("finalizers", &meta.finalizers));
  if (const Json* owners = reader.Find("ownerReferences")) {
    const std::string path = reader.PathOf("ownerReferences");
    ASSIGN_OR_RETURN(const Json::array_t* array, internal::JsonArray(*owners, path));
    for (std::size_t i = 0; array != nullptr && i < array->size(); ++i) {
      if (!(*array)[i].is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat(internal::IndexPath(path, i), " must be an object"));
      }
      meta.owner_references.push_back((*array)[i]);
    }
  }
  // Members Go types strictly but OCM does not read: check their types, keep them.
  std::optional<std::int64_t> grace;
  RETURN_IF_ERROR(reader.OptionalInt64("deletionGracePeriodSeconds", &grace));
  std::optional<std::string> text;
  RETURN_IF_ERROR(reader.OptionalString("selfLink", &text));
  if (const Json* fields = reader.Find("managedFields")) {
    RETURN_IF_ERROR(internal::JsonArray(*fields, reader.PathOf("managedFields")).status());
  }
  for (const auto& [member, member_value] : value.get_ref<const Json::object_t&>()) {
    if (!IsKnownMember(member) && !member_value.is_null()) {
      meta.other[member] = member_value;
    }
  }
  return meta;
}

nlohmann::json ToJson(const ObjectMeta& meta) {
  Json out = meta.other.is_object() ? meta.other : Json::object();
  auto set_string = [&](const char* member, const std::string& value) {
    if (!value.empty()) {
      out[member] = value;
    }
  };
  set_string("name", meta.name);
  set_string("generateName", meta.generate_name);
  set_string("namespace", meta.namespace_);
  set_string("uid", meta.uid);
  set_string("resourceVersion", meta.resource_version);
  if (meta.generation != 0) {
    out["generation"] = meta.generation;
  }
  if (meta.creation_timestamp.has_value()) {
    out["creationTimestamp"] = kube::KubeTime(*meta.creation_timestamp);
  }
  if (meta.deletion_timestamp.has_value()) {
    out["deletionTimestamp"] = kube::KubeTime(*meta.deletion_timestamp);
  }
  if (!meta.labels.empty()) {
    out["labels"] = meta.labels;
  }
  if (!meta.annotations.empty()) {
    out["annotations"] = meta.annotations;
  }
  if (!meta.finalizers.empty()) {
    out["finalizers"] = meta.finalizers;
  }
  if (!meta.owner_references.empty()) {
    out["ownerReferences"] = meta.owner_references;
  }
  return out;
}

absl::StatusOr<ObjectMeta> ParseObjectMeta(std::string_view json, const CodecLimits& limits) {
  ASSIGN_OR_RETURN(const Json value, internal::ParseJson(json, limits, "metadata extension"));
  return ObjectMetaFromJson(value);
}

absl::StatusOr<std::string> FormatObjectMeta(const ObjectMeta& meta) {
  auto text = internal::GoJson(ToJson(meta));
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot encode metadata: ", std::string(text.status().message())));
  }
  return text;
}

absl::StatusOr<ObjectMeta> ObjectMetaOf(const Event& event, const CodecLimits& limits) {
  ASSIGN_OR_RETURN(const std::string text, event.MetadataJson());
  return ParseObjectMeta(text, limits);
}

absl::Status SetObjectMeta(Event& event, const ObjectMeta& meta) {
  ASSIGN_OR_RETURN(std::string text, FormatObjectMeta(meta));
  event.SetString(kExtMetadata, std::move(text));
  return absl::OkStatus();
}

absl::StatusOr<LogTracing> ParseLogTracing(std::string_view json, const CodecLimits& limits) {
  ASSIGN_OR_RETURN(const Json value, internal::ParseJson(json, limits, "logtracing extension"));
  if (!value.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("logtracing must be a JSON object, got ",
                                                   std::string(internal::JsonTypeName(value))));
  }
  LogTracing tracing;
  for (const auto& [key, member] : value.get_ref<const Json::object_t&>()) {
    if (!member.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("logtracing.", key, " must be a string, got ",
                                                     std::string(internal::JsonTypeName(member))));
    }
    tracing.emplace(key, member.get<std::string>());
  }
  return tracing;
}

absl::StatusOr<std::string> FormatLogTracing(const LogTracing& tracing) {
  auto text = internal::GoJson(Json(tracing));
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot encode logtracing: ", std::string(text.status().message())));
  }
  return text;
}

absl::StatusOr<LogTracing> LogTracingOf(const Event& event, const CodecLimits& limits) {
  if (!event.HasExtension(kExtLogTracing)) {
    return LogTracing{};
  }
  ASSIGN_OR_RETURN(const std::string text, event.LogTracingJson());
  return ParseLogTracing(text, limits);
}

}  // namespace mmi::cloudevents
