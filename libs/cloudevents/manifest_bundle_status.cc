// The ManifestBundleStatus half of manifest_bundle.h: conditions, per-manifest resource status
// and status feedback values, to and from the JSON the Go work agent writes.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/bundle_json.h"
#include "libs/cloudevents/internal/json.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"

namespace mmi::cloudevents {
namespace {

using internal::ForEachElement;
using internal::Json;
using internal::ObjectReader;

// --- encoding ------------------------------------------------------------------------------------

Json ToJson(const Condition& condition) {
  Json out{{"type", condition.type},
           {"status", condition.status},
           {"lastTransitionTime", condition.last_transition_time.has_value()
                                      ? Json(kube::KubeTime(*condition.last_transition_time))
                                      : Json(nullptr)},
           {"reason", condition.reason},
           {"message", condition.message}};
  if (condition.observed_generation != 0) {
    out["observedGeneration"] = condition.observed_generation;
  }
  return out;
}

Json ConditionsJson(const std::vector<Condition>& conditions) {
  Json out = Json::array();
  for (const auto& condition : conditions) {
    out.push_back(ToJson(condition));
  }
  return out;
}

Json ToJson(const FieldValue& value) {
  Json out{{"type", std::string(FieldValueTypeName(value.type))}};
  switch (value.type) {
    case FieldValueType::kInteger:
      out["integer"] = value.integer;
      break;
    case FieldValueType::kString:
      out["string"] = value.string;
      break;
    case FieldValueType::kBoolean:
      out["boolean"] = value.boolean;
      break;
    case FieldValueType::kJsonRaw:
      out["jsonRaw"] = value.json_raw;
      break;
  }
  return out;
}

Json ToJson(const ManifestCondition& condition) {
  const auto& meta = condition.resource_meta;
  Json feedback = Json::object();
  if (!condition.status_feedback.empty()) {
    Json values = Json::array();
    for (const auto& value : condition.status_feedback) {
      values.push_back(Json{{"name", value.name}, {"fieldValue", ToJson(value.field_value)}});
    }
    feedback["values"] = std::move(values);
  }
  return Json{{"resourceMeta", Json{{"ordinal", meta.ordinal},
                                    {"group", meta.group},
                                    {"version", meta.version},
                                    {"kind", meta.kind},
                                    {"resource", meta.resource},
                                    {"name", meta.name},
                                    {"namespace", meta.namespace_}}},
              {"statusFeedback", std::move(feedback)},
              {"conditions", ConditionsJson(condition.conditions)}};
}

// --- decoding ------------------------------------------------------------------------------------

absl::StatusOr<Condition> ConditionFromJson(const Json& value, std::string path) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  Condition condition;
  RETURN_IF_ERROR(reader.String("type", &condition.type));
  RETURN_IF_ERROR(reader.String("status", &condition.status));
  RETURN_IF_ERROR(reader.Int64("observedGeneration", &condition.observed_generation));
  std::optional<std::string> time_text;
  RETURN_IF_ERROR(reader.OptionalString("lastTransitionTime", &time_text));
  if (time_text.has_value() && !time_text->empty()) {
    auto time = ParseTimestamp(*time_text);
    if (!time.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(reader.PathOf("lastTransitionTime"), ": ",
                                                     std::string(time.status().message())));
    }
    condition.last_transition_time = *time;
  }
  RETURN_IF_ERROR(reader.String("reason", &condition.reason));
  RETURN_IF_ERROR(reader.String("message", &condition.message));
  return condition;
}

absl::Status ConditionsFromJson(const ObjectReader& reader, std::vector<Condition>* out) {
  return ForEachElement(reader, "conditions", [&](const Json& element, std::string p) {
    ASSIGN_OR_RETURN(auto condition, ConditionFromJson(element, std::move(p)));
    out->push_back(std::move(condition));
    return absl::OkStatus();
  });
}

absl::StatusOr<FieldValue> FieldValueFromJson(const Json& value, std::string path,
                                              const CodecLimits& limits) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  FieldValue field;
  std::string type;
  RETURN_IF_ERROR(reader.String("type", &type));
  auto require = [&](std::string_view member) { return reader.Require(member); };
  if (type == "Integer") {
    field.type = FieldValueType::kInteger;
    RETURN_IF_ERROR(require("integer"));
    RETURN_IF_ERROR(reader.Int64("integer", &field.integer));
  } else if (type == "String") {
    field.type = FieldValueType::kString;
    RETURN_IF_ERROR(require("string"));
    RETURN_IF_ERROR(reader.String("string", &field.string));
  } else if (type == "Boolean") {
    field.type = FieldValueType::kBoolean;
    RETURN_IF_ERROR(require("boolean"));
    RETURN_IF_ERROR(reader.Bool("boolean", &field.boolean));
  } else if (type == "JsonRaw") {
    field.type = FieldValueType::kJsonRaw;
    RETURN_IF_ERROR(require("jsonRaw"));
    RETURN_IF_ERROR(reader.String("jsonRaw", &field.json_raw));
    // jsonRaw is a string holding JSON text: parse it a second time.
    auto parsed = internal::ParseJson(field.json_raw, limits, reader.PathOf("jsonRaw"));
    if (!parsed.ok()) {
      return parsed.status();
    }
    field.json_raw_value = *std::move(parsed);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(reader.PathOf("type"), " must be Integer, String, Boolean or JsonRaw, got ",
                     internal::Quote(type)));
  }
  return field;
}

absl::StatusOr<ManifestCondition> ManifestConditionFromJson(const Json& value, std::string path,
                                                            const CodecLimits& limits) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::move(path)));
  ManifestCondition condition;
  if (const Json* meta = reader.Find("resourceMeta")) {
    ASSIGN_OR_RETURN(auto meta_reader, ObjectReader::Make(*meta, reader.PathOf("resourceMeta")));
    auto& out = condition.resource_meta;
    RETURN_IF_ERROR(meta_reader.Int32("ordinal", &out.ordinal));
    RETURN_IF_ERROR(meta_reader.String("group", &out.group));
    RETURN_IF_ERROR(meta_reader.String("version", &out.version));
    RETURN_IF_ERROR(meta_reader.String("kind", &out.kind));
    RETURN_IF_ERROR(meta_reader.String("resource", &out.resource));
    RETURN_IF_ERROR(meta_reader.String("name", &out.name));
    RETURN_IF_ERROR(meta_reader.String("namespace", &out.namespace_));
  }
  if (const Json* feedback = reader.Find("statusFeedback")) {
    ASSIGN_OR_RETURN(auto feedback_reader,
                     ObjectReader::Make(*feedback, reader.PathOf("statusFeedback")));
    RETURN_IF_ERROR(
        ForEachElement(feedback_reader, "values", [&](const Json& element, std::string p) {
          ASSIGN_OR_RETURN(auto value_reader, ObjectReader::Make(element, std::move(p)));
          std::string name;
          RETURN_IF_ERROR(value_reader.String("name", &name));
          RETURN_IF_ERROR(value_reader.Require("fieldValue"));
          ASSIGN_OR_RETURN(FieldValue field_value,
                           FieldValueFromJson(*value_reader.Find("fieldValue"),
                                              value_reader.PathOf("fieldValue"), limits));
          condition.status_feedback.push_back(
              FeedbackValue{std::move(name), std::move(field_value)});
          return absl::OkStatus();
        }));
  }
  RETURN_IF_ERROR(ConditionsFromJson(reader, &condition.conditions));
  return condition;
}

}  // namespace

std::string_view FieldValueTypeName(FieldValueType type) {
  switch (type) {
    case FieldValueType::kInteger:
      return "Integer";
    case FieldValueType::kString:
      return "String";
    case FieldValueType::kBoolean:
      return "Boolean";
    case FieldValueType::kJsonRaw:
      return "JsonRaw";
  }
  return "String";
}

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const auto& condition : conditions) {
    if (condition.type == type) {
      return &condition;
    }
  }
  return nullptr;
}

bool IsDeleted(const ManifestBundleStatus& status) {
  const Condition* deleted = FindCondition(status.conditions, kConditionDeleted);
  return deleted != nullptr && deleted->status == kConditionTrue;
}

nlohmann::json ToJson(const ManifestBundleStatus& status) {
  Json out = Json::object();
  if (status.manifest_bundle.has_value()) {
    out["manifestBundle"] = ToJson(*status.manifest_bundle);
  }
  out["conditions"] = status.conditions.empty() ? Json(nullptr) : ConditionsJson(status.conditions);
  if (!status.resource_status.empty()) {
    Json resources = Json::array();
    for (const auto& resource : status.resource_status) {
      resources.push_back(ToJson(resource));
    }
    out["resourceStatus"] = std::move(resources);
  }
  return out;
}

absl::StatusOr<ManifestBundleStatus> ManifestBundleStatusFromJson(const nlohmann::json& value,
                                                                  std::string_view path,
                                                                  const CodecLimits& limits) {
  ASSIGN_OR_RETURN(auto reader, ObjectReader::Make(value, std::string(path)));
  ManifestBundleStatus status;
  if (const Json* bundle = reader.Find("manifestBundle")) {
    ASSIGN_OR_RETURN(status.manifest_bundle,
                     ManifestBundleFromJson(*bundle, reader.PathOf("manifestBundle"), limits));
  }
  RETURN_IF_ERROR(ConditionsFromJson(reader, &status.conditions));
  RETURN_IF_ERROR(ForEachElement(reader, "resourceStatus", [&](const Json& element, std::string p) {
    ASSIGN_OR_RETURN(auto condition, ManifestConditionFromJson(element, std::move(p), limits));
    status.resource_status.push_back(std::move(condition));
    return absl::OkStatus();
  }));
  return status;
}

absl::StatusOr<std::string> EncodeManifestBundleStatus(const ManifestBundleStatus& status) {
  return internal::EncodeJson(ToJson(status), "ManifestBundleStatus");
}

absl::StatusOr<ManifestBundleStatus> DecodeManifestBundleStatus(std::string_view data,
                                                                const CodecLimits& limits) {
  ASSIGN_OR_RETURN(auto json, internal::ParseJson(data, limits, "ManifestBundleStatus data"));
  return ManifestBundleStatusFromJson(json, "data", limits);
}

absl::StatusOr<ManifestBundleStatus> ManifestBundleStatusOf(const Event& event,
                                                            const CodecLimits& limits) {
  RETURN_IF_ERROR(internal::CheckEventData(event));
  return DecodeManifestBundleStatus(*event.data, limits);
}

}  // namespace mmi::cloudevents
